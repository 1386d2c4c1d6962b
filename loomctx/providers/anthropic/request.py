"""An Anthropic Messages request read into the OpenAI-shaped messages a session stores, and
the Messages stream's own events.

``tool_use`` blocks become an assistant's ``tool_calls`` and ``tool_result`` blocks become
``tool`` messages, in order; images stay image parts (the renderer writes them back as image
blocks).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from loomctx.errors import InputError
from loomctx.providers._chat import message_object
from loomctx.providers.sse import Event
from loomctx.text.messages import content_text


def anthropic_system(system: Any) -> str | None:
    """The ``system`` field (a string or text blocks) as text; None when absent."""
    if system is None:
        return None
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return content_text(system)
    raise InputError("system must be a string or a list of text blocks, got "
                     f"{type(system).__name__}", where="system")


def from_anthropic(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """Anthropic ``messages`` as OpenAI-style messages (tool use and results split out)."""
    out: list[dict[str, Any]] = []
    for i, raw in enumerate(messages):
        msg = message_object(raw, f"messages[{i}]")
        role, content = msg.get("role"), msg.get("content")
        if role not in ("user", "assistant"):
            raise InputError(f"role must be 'user' or 'assistant', got {role!r}",
                             where=f"messages[{i}]")
        if isinstance(content, str):
            out.append({"role": role, "content": content})
            continue
        if not isinstance(content, list):
            raise InputError("content must be a string or a list of blocks, got "
                             f"{type(content).__name__}", where=f"messages[{i}]")
        if role == "assistant":
            out.append(_assistant(content, f"messages[{i}]"))
        else:
            out.extend(_user(content, f"messages[{i}]"))
    return out


def _assistant(blocks: list[Any], where: str) -> dict[str, Any]:
    texts, calls = [], []
    for k, b in enumerate(blocks):
        block = message_object(b, f"{where}.content[{k}]")
        if block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_use":
            calls.append({"id": block.get("id"), "type": "function",
                          "function": {"name": block.get("name"),
                                       "arguments": json.dumps(block.get("input") or {})}})
    msg: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        msg["tool_calls"] = calls
    return msg


def _user(blocks: list[Any], where: str) -> list[dict[str, Any]]:
    """Tool results first (they answer the previous assistant turn), then the user's parts."""
    results: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for k, b in enumerate(blocks):
        block = message_object(b, f"{where}.content[{k}]")
        kind = block.get("type")
        if kind == "tool_result":
            text = content_text(block.get("content"))
            if block.get("is_error"):
                text = f"error: {text}"
            results.append({"role": "tool", "tool_call_id": block.get("tool_use_id"),
                            "content": text})
        elif kind == "text":
            parts.append({"type": "text", "text": block.get("text")})
        elif kind == "image":
            parts.append({"type": "image", "source": block.get("source")})
        elif kind == "document":
            parts.append({"type": "text", "text": content_text([block])})
    if parts and all(p["type"] == "text" for p in parts):
        results.append({"role": "user", "content": "\n".join(str(p["text"]) for p in parts)})
    elif parts:
        results.append({"role": "user", "content": parts})
    return results


def request_tools(tools: list[Any]) -> list[Any]:
    """A request's tool definitions in the OpenAI shape loomctx counts (server tools, typed
    other than ``custom``, are passed on and not counted)."""
    return [{"name": t.get("name"), "description": t.get("description"),
             "parameters": t.get("input_schema") or {"type": "object"}}
            if isinstance(t, Mapping) and "input_schema" in t else t
            for t in tools if not (isinstance(t, Mapping) and t.get("type") not in
                                   (None, "custom"))]


def is_last(event: Event) -> bool:
    """``message_stop``: the event that ends a Messages stream."""
    if event.event == "message_stop":
        return True
    if event.data is None or "message_stop" not in event.data:
        return False
    try:
        data = json.loads(event.data)
    except (ValueError, RecursionError):
        return False
    return isinstance(data, dict) and data.get("type") == "message_stop"


def error_event(message: str, type_: str = "api_error") -> bytes:
    """One stream event that an SDK raises as an API error."""
    data = {"type": "error", "error": {"type": type_, "message": message}}
    return f"event: error\ndata: {json.dumps(data)}\n\n".encode()


__all__ = ["anthropic_system", "error_event", "from_anthropic", "is_last", "request_tools"]
