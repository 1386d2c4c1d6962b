"""Validation and grouping of OpenAI-style chat messages (the history input format).

A history is a list of dicts with OpenAI message fields (``role``, ``content``, ``name``,
``tool_calls``, ``tool_call_id``) plus optional ``id`` and ``timestamp``. An assistant message with
``tool_calls`` and the ``tool`` messages answering it form one atomic group.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from loomctx.errors import InputError

ROLES = ("system", "developer", "user", "assistant", "tool")
_PROVIDER_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id")


def parse_timestamp(value: Any, *, where: str | None = None) -> float | None:
    """Epoch seconds from an epoch number or an ISO 8601 string; None stays None."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise InputError(f"timestamp {value!r} is not a time", where=where)
    if isinstance(value, (int, float)):
        if value != value or value in (float("inf"), float("-inf")):
            raise InputError(f"timestamp {value!r} is not finite", where=where)
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            return float(text)
        except ValueError:
            pass
        try:
            dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise InputError(
                f"timestamp {value!r} is neither epoch seconds nor ISO 8601 "
                "(e.g. 2024-05-08T13:56:00Z)",
                where=where,
            ) from None
        if dt.tzinfo is None:
            from datetime import timezone

            dt = dt.replace(tzinfo=timezone.utc)
        return dt.timestamp()
    raise InputError(f"timestamp {value!r} must be a number or an ISO 8601 string", where=where)


def content_text(content: Any) -> str:
    """The text of a message content: a string, or the text parts of a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, Mapping):
                if part.get("type") == "text":
                    out.append(str(part.get("text", "")))
                elif part.get("type") in ("image_url", "input_image", "image"):
                    out.append("[image]")
                else:
                    out.append(json.dumps(part, ensure_ascii=False, sort_keys=True))
            else:
                out.append(str(part))
        return "\n".join(out)
    return str(content)


def message_text(message: Mapping[str, Any]) -> str:
    """Searchable text of a message: content, plus tool call names and arguments."""
    text = content_text(message.get("content"))
    calls = message.get("tool_calls") or []
    parts = [text] if text else []
    for call in calls:
        fn = call.get("function", {}) if isinstance(call, Mapping) else {}
        parts.append(f"{fn.get('name', '')}({fn.get('arguments', '')})")
    return "\n".join(parts)


def provider_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """The message with only the provider fields (drops ``id``, ``timestamp``, extras)."""
    return {k: message[k] for k in _PROVIDER_KEYS if k in message and message[k] is not None}


def validate_history(
    messages: Sequence[Mapping[str, Any]], *, origin: str = "history", start: int = 0,
    open_calls: dict[str, str] | None = None, seen_ids: set[str] | None = None,
) -> list[dict[str, Any]]:
    """Check roles and tool-call pairing; return normalised copies with ``id`` and ``group``.

    Errors name ``origin`` and the 1-based line (``start`` + index + 1) and say how to fix it.
    ``open_calls`` (tool_call_id → group) and ``seen_ids`` carry state between calls, so a
    history can be validated incrementally; both are updated in place.
    """
    out: list[dict[str, Any]] = []
    open_calls = {} if open_calls is None else open_calls
    seen_ids = set() if seen_ids is None else seen_ids
    for i, raw in enumerate(messages, start):
        where = f"{origin}:{i + 1}"
        if not isinstance(raw, Mapping):
            raise InputError(f"a message must be a JSON object, got {type(raw).__name__}",
                             where=where)
        role = raw.get("role")
        if role not in ROLES:
            raise InputError(f"unknown role {role!r}: use one of {list(ROLES)!r}", where=where)
        msg = dict(raw)
        mid = str(msg.get("id") or f"m{i + 1}")
        if mid in seen_ids:
            raise InputError(f"duplicate message id {mid!r}: ids must be unique", where=where)
        seen_ids.add(mid)
        msg["id"] = mid
        msg["timestamp"] = parse_timestamp(msg.get("timestamp"), where=where)
        content = msg.get("content")
        if content is not None and not isinstance(content, (str, list)):
            raise InputError(f"content must be a string or a list of parts, got {content!r}",
                             where=where)
        if role == "assistant" and msg.get("tool_calls"):
            calls = msg["tool_calls"]
            if not isinstance(calls, list):
                raise InputError("tool_calls must be a list", where=where)
            for call in calls:
                cid = call.get("id") if isinstance(call, Mapping) else None
                if not cid:
                    raise InputError("each tool call needs an 'id'", where=where)
                open_calls[cid] = f"g:{mid}"
            msg["group"] = f"g:{mid}"
        elif role == "tool":
            cid = msg.get("tool_call_id")
            if cid not in open_calls:
                raise InputError(
                    f"tool result with tool_call_id {cid!r} has no matching assistant tool call "
                    "before it: add the assistant message with that call, or remove the result",
                    where=where,
                )
            msg["group"] = open_calls[cid]
        out.append(msg)
    return out


__all__ = [
    "ROLES",
    "content_text",
    "message_text",
    "parse_timestamp",
    "provider_message",
    "validate_history",
]
