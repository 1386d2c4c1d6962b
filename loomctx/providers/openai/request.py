"""An OpenAI Chat Completions request as the proxy reads it, and the stream's own events."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from loomctx.providers._chat import message_object
from loomctx.providers.sse import Event
from loomctx.text.messages import content_text

SYSTEM_ROLES = frozenset({"system", "developer"})


def split_openai(messages: Sequence[Any]) -> tuple[str | None, list[dict[str, Any]]]:
    """The leading system (and developer) messages' text, and the conversation after them."""
    checked = [message_object(m, f"messages[{i}]") for i, m in enumerate(messages)]
    n = 0
    while n < len(checked) and checked[n].get("role") in SYSTEM_ROLES:
        n += 1
    system = "\n\n".join(content_text(m.get("content")) for m in checked[:n]) if n else None
    return system, checked[n:]


def usage_fields(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """``stream_options`` asking for the usage chunk, when a streaming request did not ask
    (the proxy hides the chunk again); None when it asked, or is not a stream."""
    if not body.get("stream"):
        return None
    options = body.get("stream_options")
    if options is not None and not isinstance(options, Mapping):
        return None  # not ours to fix: the upstream answers it
    if options and options.get("include_usage"):
        return None
    return {"stream_options": {**(options or {}), "include_usage": True}}


def is_last(event: Event) -> bool:
    """``data: [DONE]``: the event that ends a Chat Completions stream."""
    return event.data is not None and event.data.strip() == "[DONE]"


def is_usage_only(event: Event) -> bool:
    """A stream event that carries only the usage (``choices`` empty)."""
    if event.data is None or not event.data.startswith("{"):
        return False
    try:
        parsed = json.loads(event.data)
    except (ValueError, RecursionError):
        return False
    return isinstance(parsed, dict) and parsed.get("choices") == [] and "usage" in parsed


def error_event(message: str, type_: str = "api_error") -> bytes:
    """One stream event that an SDK raises as an API error."""
    data: dict[str, Any] = {"error": {"message": message, "type": type_, "code": None}}
    return f"data: {json.dumps(data)}\n\n".encode()


__all__ = ["SYSTEM_ROLES", "error_event", "is_last", "is_usage_only", "split_openai",
           "usage_fields"]
