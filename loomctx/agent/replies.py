"""A model's reply as the session stores it.

The :class:`~loomctx.models.protocol.ChatModel` contract gives an OpenAI-shaped assistant
message; what a session stores is that message with only the fields a request may carry
(``role``, ``content``, ``tool_calls``), each tool call complete: its id (the provider's,
unchanged; one is made up only when a server sent none, since a result must name its call),
``type: "function"``, and arguments as a JSON string.

Arguments that are not valid JSON (a model's slip) cannot be stored — a provider would refuse
the next request — so the stored call carries ``{}`` while the tool runs with the text the
model sent, and its ``error:`` result quotes that text: the model sees what went wrong.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def assistant_message(message: Mapping[str, Any], turn: int,
                      ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The reply to store (an assistant message, its tool calls made complete) and the calls
    to run (the same ids and names, with the arguments as the model sent them)."""
    stored, to_run = [], []
    for i, call in enumerate(message.get("tool_calls") or []):
        fn = call.get("function") or {}
        name, args = str(fn.get("name", "")), fn.get("arguments")
        if args is None or args == "":
            args = "{}"
        elif not isinstance(args, str):
            args = json.dumps(args, ensure_ascii=False)
        cid = str(call.get("id") or f"call_{turn}_{i}")
        to_run.append({"id": cid, "type": "function",
                       "function": {"name": name, "arguments": args}})
        stored.append({"id": cid, "type": "function",
                       "function": {"name": name, "arguments": args if _is_json(args)
                                    else "{}"}})
    content = message.get("content")
    if content is None and not stored:
        content = ""
    out: dict[str, Any] = {"role": "assistant", "content": content}
    if stored:
        out["tool_calls"] = stored
    return out, to_run


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


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
