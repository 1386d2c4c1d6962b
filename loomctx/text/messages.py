"""Text of chat messages: the one place that turns a message or its parts into plain text.

Used to count (the ``text`` provider), to search and score (a history item's ``content``) and to
render for providers that take text where OpenAI takes parts. A bottom-layer module: it knows
the OpenAI and Anthropic message shapes, nothing of loomctx above ``text``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

PROVIDER_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id")
"""The fields a provider reads from an OpenAI-style message."""
IMAGE_TYPES = frozenset({"image_url", "image", "input_image"})


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def part_text(part: Any) -> str:
    """One content part as text: text as is, images as ``[image]``, Anthropic ``tool_use`` as
    ``-> name(input)``, ``tool_result`` as its content, anything else as compact JSON (without
    ``cache_control``, an API hint the model never sees)."""
    if isinstance(part, str):
        return part
    if isinstance(part, Mapping):
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            return part["text"]
        if kind in IMAGE_TYPES:
            return "[image]"
        if kind == "tool_use":
            return f"-> {part.get('name', '')}({_dump(part.get('input', {}))})"
        if kind == "tool_result":
            inner = part.get("content")
            if isinstance(inner, str):
                return inner
            if isinstance(inner, Sequence):
                return "\n".join(part_text(p) for p in inner)
            return ""
        return _dump({k: v for k, v in part.items() if k != "cache_control"})
    return _dump(part)


def content_text(content: Any) -> str:
    """The text of a message content: a string, or its parts' text joined by newlines."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part_text(p) for p in content)
    return str(content)


def _calls(message: Mapping[str, Any]) -> list[tuple[Any, Any]]:
    out = []
    for call in message.get("tool_calls") or ():
        fn = call.get("function", {}) if isinstance(call, Mapping) else {}
        fn = fn if isinstance(fn, Mapping) else {}
        out.append((fn.get("name", ""), fn.get("arguments", "")))
    return out


def message_text(message: Mapping[str, Any]) -> str:
    """Searchable text of a message: its content, plus ``name(arguments)`` per tool call."""
    text = content_text(message.get("content"))
    return "\n".join(([text] if text else []) + [f"{n}({a})" for n, a in _calls(message)])


def render_text(message: Mapping[str, Any]) -> str:
    """The plain-text form of a message for the ``text`` provider:
    ``"<role>[ (name)]: <content>\\n"``, tool calls as ``-> name(arguments)`` lines."""
    role = str(message.get("role", "user"))
    name = message.get("name") or message.get("tool_call_id")
    head = f"{role} ({name})" if name else role
    content = message.get("content")
    body = [content] if isinstance(content, str) else (
        [part_text(p) for p in content] if isinstance(content, Sequence) else [])
    body += [f"-> {n}({a})" for n, a in _calls(message)]
    return f"{head}: " + "\n".join(body) + "\n"


def provider_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """The message with only the provider fields (drops ``id``, ``timestamp``, extras)."""
    return {k: message[k] for k in PROVIDER_KEYS if k in message and message[k] is not None}


def common_prefix_length(a: str, b: str) -> int:
    """Characters at the start of ``a`` and ``b`` that are equal: what a provider's prefix cache
    can reuse of ``b`` after ``a``. Bisection over slice comparisons (they run in C)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


__all__ = ["IMAGE_TYPES", "PROVIDER_KEYS", "common_prefix_length", "content_text",
           "message_text", "part_text", "provider_message", "render_text"]
