"""A stored reply sent again, as the provider would have sent it: for a client's retry of a turn
whose reply the session already holds.

The proxy stores a turn (the user's messages and the reply) before the client gets the reply's
last event or its 200. A client that loses its connection after that moment never sees the
reply, and its SDK sends the same request again; the session recognises it
(:meth:`~loomctx.service.core.Service.stored_reply`) and the proxy answers with the stored reply
instead of calling the upstream a second time, so the user's message is not stored twice and no
reply nobody saw sits between its copies.

The session keeps replies in the OpenAI message shape (text and tool calls), so the answer is
made again from it: a Chat Completions body or chunk stream, or a Messages body or event stream.
The usage is zero (no upstream call was made for it); ``X-Loomctx-Replayed: true`` says so.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from typing import Any

REPLAYED = {"openai", "anthropic"}
"""The wire formats a stored reply can be replayed in (another format goes upstream again)."""
REPLAY_WINDOW = 900.0
"""Seconds after its storing during which a reply is sent again for a retry of its turn (the
SDKs' default request timeout is 600 s); later, the same request is a new turn."""


def _calls(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    calls = message.get("tool_calls")
    return [c for c in calls if isinstance(c, Mapping)] if isinstance(calls, list) else []


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else ""


def _function(call: Mapping[str, Any]) -> tuple[str, str]:
    fn = call.get("function")
    fn = fn if isinstance(fn, Mapping) else {}
    return str(fn.get("name") or ""), str(fn.get("arguments") or "{}")


def _input(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except (ValueError, RecursionError):
        return {}


def body(fmt: str, message: Mapping[str, Any], model: str) -> dict[str, Any]:
    """The JSON answer of ``fmt`` carrying the stored reply ``message``."""
    calls = _calls(message)
    if fmt == "anthropic":
        content: list[dict[str, Any]] = [{"type": "text", "text": _text(message)}] \
            if _text(message) else []
        for c in calls:
            name, arguments = _function(c)
            content.append({"type": "tool_use", "id": c.get("id"), "name": name,
                            "input": _input(arguments)})
        return {"id": f"msg_replayed_{uuid.uuid4().hex[:20]}", "type": "message",
                "role": "assistant", "model": model, "content": content,
                "stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": 0, "output_tokens": 0}}
    reply: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if calls:
        reply["tool_calls"] = calls
    return {"id": f"chatcmpl-replayed-{uuid.uuid4().hex[:20]}", "object": "chat.completion",
            "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": reply, "logprobs": None,
                         "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}


def _sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def stream(fmt: str, message: Mapping[str, Any], model: str, *, usage: bool) -> list[bytes]:
    """The events of ``fmt``'s stream carrying the stored reply ``message``, its last event
    last (``usage``: the client asked for OpenAI's usage chunk)."""
    whole = body(fmt, message, model)
    if fmt == "anthropic":
        start = {**whole, "content": [], "stop_reason": None}
        out = [_sse({"type": "message_start", "message": start}, "message_start")]
        for i, block in enumerate(whole["content"]):
            first: dict[str, Any]
            if block["type"] == "text":
                first = {"type": "text", "text": ""}
                piece = {"type": "text_delta", "text": block["text"]}
            else:
                first = {**block, "input": {}}
                piece = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            out += [_sse({"type": "content_block_start", "index": i, "content_block": first},
                         "content_block_start"),
                    _sse({"type": "content_block_delta", "index": i, "delta": piece},
                         "content_block_delta"),
                    _sse({"type": "content_block_stop", "index": i}, "content_block_stop")]
        out += [_sse({"type": "message_delta", "delta": {"stop_reason": whole["stop_reason"],
                                                         "stop_sequence": None},
                      "usage": {"output_tokens": 0}}, "message_delta"),
                _sse({"type": "message_stop"}, "message_stop")]
        return out
    choice = whole["choices"][0]
    head = {k: whole[k] for k in ("id", "created", "model")} | {"object":
                                                                  "chat.completion.chunk"}
    delta: dict[str, Any] = {"role": "assistant", "content": _text(message)}
    if "tool_calls" in choice["message"]:
        delta["tool_calls"] = [{"index": i, **c} for i, c in
                               enumerate(choice["message"]["tool_calls"])]
    out = [_sse({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
           _sse({**head, "choices": [{"index": 0, "delta": {},
                                      "finish_reason": choice["finish_reason"]}]})]
    if usage:
        out.append(_sse({**head, "choices": [], "usage": whole["usage"]}))
    return [*out, b"data: [DONE]\n\n"]


__all__ = ["REPLAYED", "REPLAY_WINDOW", "body", "stream"]
