"""A model's reply as the session stores it.

The :class:`~loomctx.models.protocol.ChatModel` contract gives an OpenAI-shaped assistant
message; what a session stores is that message with only the fields a request may carry
(``role``, ``content``, ``tool_calls``), each tool call complete: its id (the provider's,
unchanged; one is made up only when a server sent none, since a result must name its call),
``type: "function"``, and arguments as a JSON string.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def assistant_message(message: Mapping[str, Any], turn: int) -> dict[str, Any]:
    """The reply to store: an assistant message, its tool calls made complete."""
    calls = []
    for i, call in enumerate(message.get("tool_calls") or []):
        fn = dict(call.get("function") or {})
        args = fn.get("arguments")
        if args is None or args == "":
            fn["arguments"] = "{}"
        elif not isinstance(args, str):
            fn["arguments"] = json.dumps(args, ensure_ascii=False)
        fn["name"] = str(fn.get("name", ""))
        calls.append({"id": str(call.get("id") or f"call_{turn}_{i}"), "type": "function",
                      "function": {"name": fn["name"], "arguments": fn["arguments"]}})
    content = message.get("content")
    if content is None and not calls:
        content = ""
    out: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        out["tool_calls"] = calls
    return out


def text_of(message: Mapping[str, Any]) -> str:
    """The text of a message's content (string, or the text parts of a list)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content
                       if isinstance(p, Mapping) and p.get("type") == "text")
    return ""


__all__ = ["assistant_message", "text_of"]
