"""Reading OpenAI Chat Completions replies: a whole body, a stream of deltas, an error.

The reply is kept as the provider sent it: the tool-call ids, names and argument strings come
back byte for byte, since the next request must pair each tool result with its call's id.
llama.cpp's server, vLLM and Ollama answer in the same shape (and word a too-long input their
own way: :func:`context_length` reads each).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from loomctx.errors import ModelResponseError
from loomctx.providers.errors import error_fields, int_or_none, preview, raise_for
from loomctx.providers.reply import ModelResponse, Usage

_PROVIDER = "OpenAI-compatible API"
KEY_ENV = "OPENAI_API_KEY"
_LIMIT = re.compile(r"maximum context length is (\d+)")
_ASKED = re.compile(r"(?:resulted in|requested) (\d+) tokens")


def context_length(body: Any) -> tuple[int | None, int | None] | None:
    """(limit, requested) of an OpenAI (or llama.cpp, vLLM) "input too long" error."""
    message, code = error_fields(body)
    err = body.get("error") if isinstance(body, Mapping) else None
    if isinstance(err, Mapping) and "n_ctx" in err:  # llama.cpp server
        return int_or_none(err.get("n_ctx")), int_or_none(err.get("n_prompt_tokens"))
    limit = _LIMIT.search(message)
    if limit or code in ("context_length_exceeded", "exceed_context_size_error"):
        asked = _ASKED.search(message)
        return (int(limit.group(1)) if limit else None), (int(asked.group(1)) if asked else None)
    return None


def _count(value: Any) -> int:
    """A token count as reported; anything but a non-negative int (a list, a string) is 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _usage(raw: Any) -> Usage:
    if not isinstance(raw, Mapping):
        return Usage()
    details = raw.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, Mapping) else None
    return Usage(prompt_tokens=_count(raw.get("prompt_tokens")),
                 completion_tokens=_count(raw.get("completion_tokens")),
                 cached_tokens=_count(cached))


def _message(content: str | None, tool_calls: list[dict[str, Any]]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return message


def _text(value: Any, what: str) -> str | None:
    """Message content as text: a string, None, or a list of text parts (joined)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(p, Mapping) and isinstance(p.get("text"), str)
                                       for p in value):
        return "".join(p["text"] for p in value)
    raise ModelResponseError(f"{_PROVIDER} sent {what} that is not text: {preview(value, 120)!r}")


def _string(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ModelResponseError(f"{_PROVIDER} sent a {what} that is not a string: "
                                 f"{preview(value, 120)!r}")
    return value


def _list(value: Any, what: str) -> list[Any]:
    """``value`` as a list (absent or empty: none); anything else makes the reply unreadable.
    ``what`` says where: "sent tool_calls", "streamed choices"."""
    value = value or []
    if not isinstance(value, list):
        raise ModelResponseError(f"{_PROVIDER} {what} that are not a list: "
                                 f"{preview(value, 120)!r}")
    return value


def _reason(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _tool_call(raw: Any) -> dict[str, Any]:
    fn = raw.get("function") if isinstance(raw, Mapping) else None
    if not isinstance(fn, Mapping):
        raise ModelResponseError(f"{_PROVIDER} sent a tool call without a function object: "
                                 f"{preview(raw, 120)!r}")
    arguments = fn.get("arguments")
    return {"id": _string(raw.get("id"), "tool call id"),
            "type": raw.get("type") if isinstance(raw.get("type"), str) else "function",
            "function": {"name": _string(fn.get("name"), "tool name"),
                         "arguments": "" if arguments is None else
                         _string(arguments, "tool call's arguments")}}


def parse_completion(raw: Any) -> ModelResponse:
    """A Chat Completions response body → :class:`ModelResponse` (tool calls unchanged).

    Anything else (no ``choices[0].message`` object, content that is not text, a tool call
    without its id, name or argument string) is a :class:`ModelResponseError` naming it."""
    choices = raw.get("choices") if isinstance(raw, Mapping) else None
    choice = choices[0] if isinstance(choices, list) and choices else None
    msg = choice.get("message") if isinstance(choice, Mapping) else None
    if not isinstance(choice, Mapping) or not isinstance(msg, Mapping):
        raise ModelResponseError(f"{_PROVIDER} reply has no readable choices[0].message: "
                                 f"{preview(raw, 200)!r}")
    calls = _list(msg.get("tool_calls"), "sent tool_calls")
    return ModelResponse(message=_message(_text(msg.get("content"), "content"),
                                          [_tool_call(c) for c in calls]),
                         usage=_usage(raw.get("usage")),
                         finish_reason=_reason(choice.get("finish_reason")), raw=raw)


class OpenAIStream:
    """Joins streamed deltas into the message a non-streamed call would have returned."""

    def __init__(self) -> None:
        self.done = False
        """``data: [DONE]`` came: what follows is read (so the connection closes) and ignored."""
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish: str | None = None
        self.usage = Usage()
        self.chunks: list[Any] = []

    def feed(self, event: str, data: str) -> tuple[str, bool]:
        if self.done or data.strip() == "[DONE]":
            self.done = True
            return "", False
        try:
            chunk = json.loads(data)
        except (ValueError, RecursionError) as exc:
            raise ModelResponseError(f"{_PROVIDER} streamed a chunk that is not JSON: "
                                     f"{data[:120]!r}") from exc
        if isinstance(chunk, dict) and "error" in chunk:
            raise_for(_PROVIDER, None, chunk, key_env=KEY_ENV)
        return self.add(chunk)

    def add(self, chunk: Any) -> tuple[str, bool]:
        self.chunks.append(chunk)
        if not isinstance(chunk, Mapping):
            raise ModelResponseError(f"{_PROVIDER} streamed a chunk that is not an object: "
                                     f"{preview(chunk, 120)!r}")
        if chunk.get("usage"):
            self.usage = _usage(chunk["usage"])
        text, new_call = "", False
        for choice in _list(chunk.get("choices"), "streamed choices"):
            delta = choice.get("delta") if isinstance(choice, Mapping) else None
            if not isinstance(choice, Mapping) or not isinstance(delta, Mapping | None):
                raise ModelResponseError(f"{_PROVIDER} streamed a choice without a delta "
                                         f"object: {preview(choice, 120)!r}")
            delta = delta or {}
            piece = _text(delta.get("content"), "a content delta")
            if piece:
                text += piece
            for tc in _list(delta.get("tool_calls"), "streamed tool_calls"):
                fn = tc.get("function") if isinstance(tc, Mapping) else None
                if not isinstance(tc, Mapping) or not isinstance(fn, Mapping | None):
                    raise ModelResponseError(f"{_PROVIDER} streamed an unreadable tool call "
                                             f"delta: {preview(tc, 120)!r}")
                index = tc.get("index", len(self.calls))
                if not isinstance(index, int) or isinstance(index, bool):
                    raise ModelResponseError(f"{_PROVIDER} streamed a tool call index that is "
                                             f"not an int: {index!r}")
                call = self.calls.get(index)
                if call is None:
                    call = self.calls[index] = {"id": "", "type": "function",
                                                "function": {"name": "", "arguments": ""}}
                    new_call = True
                fn = fn or {}
                call["id"] = _string(tc.get("id") or call["id"], "tool call id")
                call["function"]["name"] += _string(fn.get("name") or "", "tool name")
                call["function"]["arguments"] += _string(fn.get("arguments") or "",
                                                         "tool call's arguments")
            if choice.get("finish_reason"):
                self.finish = _reason(choice["finish_reason"])
        self.text.append(text)
        return text, new_call

    def response(self) -> ModelResponse:
        calls = [self.calls[i] for i in sorted(self.calls)]
        text = "".join(self.text)
        return ModelResponse(message=_message(text or None, calls), usage=self.usage,
                             finish_reason=self.finish, raw={"chunks": self.chunks})


__all__ = ["KEY_ENV", "OpenAIStream", "context_length", "parse_completion"]
