"""The steps a :class:`~loomctx.testing.FakeModelServer` replays, and how each goes on the wire.

A step says what happens, not how a provider spells it: ``Reply(text="hi")`` becomes a Chat
Completions body on ``/v1/chat/completions`` and a Messages body on ``/v1/messages``, as JSON or
as the SSE events each provider streams, so one script exercises both clients.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from loomctx.models.scripted import ToolCall

__all__ = ["ContextLength", "Delay", "HttpError", "Malformed", "Raw", "Reply", "Step",
           "ToolCall"]


@dataclass(frozen=True)
class Reply:
    """A successful assistant reply: text, tool calls, or both."""

    text: str | None = None
    tool_calls: Sequence[ToolCall] = ()
    prompt_tokens: int = 100
    """Input tokens reported, cached ones included."""
    completion_tokens: int = 10
    cached_tokens: int = 0
    """Input tokens reported as read from the prompt cache."""
    finish_reason: str | None = None
    """OpenAI spelling (``stop``, ``tool_calls``, ``length``); default from the content."""
    chunk_chars: int = 4
    """Characters per streamed text or argument delta."""


@dataclass(frozen=True)
class HttpError:
    """An HTTP error in the provider's error shape."""

    status: int
    message: str | None = None
    retry_after: str | float | None = None
    """Sent as the ``Retry-After`` header (seconds, or an HTTP date string)."""


@dataclass(frozen=True)
class ContextLength:
    """The provider's 400 for an input that is too long, worded as the real API words it."""

    limit: int | None = None
    """Defaults to 128000 (OpenAI) or 200000 (Anthropic)."""
    requested: int | None = None
    """Defaults to 130512 (OpenAI) or 210000 (Anthropic)."""


@dataclass(frozen=True)
class Malformed:
    """A 200 whose body (or stream event) is not valid JSON."""

    body: str = '{"id": "broken", "choices": ['


@dataclass(frozen=True)
class Raw:
    """An answer given byte for byte, for the upstreams that answer oddly: any status, headers
    and body, or ``chunks`` sent as a stream (``pause`` seconds apart); with ``cut`` the
    connection closes before the body its ``content-length`` announced is complete."""

    status: int = 200
    body: bytes | str = b""
    chunks: Sequence[bytes | str] = ()
    headers: Mapping[str, str] = field(default_factory=dict)
    cut: bool = False
    pause: float = 0.0


@dataclass(frozen=True)
class Delay:
    """Wait ``seconds`` before answering with ``then`` (for client timeouts)."""

    seconds: float
    then: Reply | HttpError | ContextLength | Malformed | Raw | str | None = None


Step = Reply | HttpError | ContextLength | Malformed | Raw | Delay
"""One scripted answer (a plain ``str`` in a script means ``Reply(text=...)``)."""

Format = Literal["openai", "anthropic"]

_OPENAI_TYPES = {429: ("rate_limit_exceeded", "requests"), 401: ("invalid_api_key",
                 "invalid_request_error"), 404: ("model_not_found", "invalid_request_error")}
_ANTHROPIC_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                    403: "permission_error", 404: "not_found_error", 413: "request_too_large",
                    429: "rate_limit_error", 529: "overloaded_error"}


def openai_error(message: str, type_: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def anthropic_error(message: str, type_: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": type_, "message": message}}


@dataclass(frozen=True)
class Rendered:
    status: int
    headers: Mapping[str, str]
    body: bytes = b""
    chunks: Sequence[bytes] = ()
    delay: float = 0.0
    cut: bool = False
    pause: float = 0.0


def _bytes(data: bytes | str) -> bytes:
    return data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data


def render(step: Step | str, fmt: Format, *, model: str, stream: bool,
           include_usage: bool) -> Rendered:
    """The HTTP answer for one step."""
    if isinstance(step, str):
        step = Reply(text=step)
    if isinstance(step, Delay):
        later = render(step.then if step.then is not None else Reply(text="late"), fmt,
                       model=model, stream=stream, include_usage=include_usage)
        return replace(later, delay=later.delay + step.seconds)
    if isinstance(step, Raw):
        return Rendered(step.status, dict(step.headers), _bytes(step.body),
                        [_bytes(c) for c in step.chunks], cut=step.cut, pause=step.pause)
    if isinstance(step, Malformed):
        if stream:
            return Rendered(200, {}, chunks=[f"data: {step.body}\n\n".encode()])
        return Rendered(200, {}, step.body.encode())
    if isinstance(step, ContextLength | HttpError):
        status, body, headers = _error(step, fmt)
        return Rendered(status, headers, json.dumps(body).encode())
    if fmt == "openai":
        if stream:
            return Rendered(200, {}, chunks=_openai_stream(step, model, include_usage))
        return Rendered(200, {}, json.dumps(_openai_body(step, model)).encode())
    if stream:
        return Rendered(200, {}, chunks=_anthropic_stream(step, model))
    return Rendered(200, {}, json.dumps(_anthropic_body(step, model)).encode())


def _error(step: ContextLength | HttpError, fmt: Format) -> tuple[int, Any, dict[str, str]]:
    if isinstance(step, ContextLength):
        if fmt == "openai":
            limit, asked = step.limit or 128000, step.requested or 130512
            return 400, openai_error(
                f"This model's maximum context length is {limit} tokens. However, your "
                f"messages resulted in {asked} tokens. Please reduce the length of the "
                "messages.", "invalid_request_error", "context_length_exceeded"), {}
        limit, asked = step.limit or 200000, step.requested or 210000
        return 400, anthropic_error(f"prompt is too long: {asked} tokens > {limit} maximum",
                                    "invalid_request_error"), {}
    headers = {} if step.retry_after is None else {"retry-after": str(step.retry_after)}
    message = step.message or f"fake error {step.status}"
    if fmt == "openai":
        code, type_ = _OPENAI_TYPES.get(step.status, (None, "server_error"))
        return step.status, openai_error(message, type_, code), headers
    type_ = _ANTHROPIC_TYPES.get(step.status, "api_error")
    return step.status, anthropic_error(message, type_), headers


def _pieces(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), max(1, size))]


def _arguments(call: ToolCall) -> str:
    return call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)


def _call_id(call: ToolCall, i: int, prefix: str) -> str:
    return call.id or f"{prefix}_{i}_{call.name}"


def _finish(step: Reply) -> str:
    return step.finish_reason or ("tool_calls" if step.tool_calls else "stop")


def _openai_usage(step: Reply) -> dict[str, Any]:
    return {"prompt_tokens": step.prompt_tokens, "completion_tokens": step.completion_tokens,
            "total_tokens": step.prompt_tokens + step.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": step.cached_tokens}}


def _openai_body(step: Reply, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": step.text, "refusal": None}
    if step.tool_calls:
        message["tool_calls"] = [
            {"id": _call_id(c, i, "call"), "type": "function",
             "function": {"name": c.name, "arguments": _arguments(c)}}
            for i, c in enumerate(step.tool_calls)]
    return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": _finish(step)}],
            "usage": _openai_usage(step)}


def _sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


def _openai_stream(step: Reply, model: str, include_usage: bool) -> list[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
                     "model": model, "choices": [{"index": 0, "delta": delta,
                                                  "finish_reason": finish}]})

    out = [chunk({"role": "assistant", "content": "" if step.text is not None else None})]
    out += [chunk({"content": p}) for p in _pieces(step.text or "", step.chunk_chars)]
    for i, c in enumerate(step.tool_calls):
        out.append(chunk({"tool_calls": [{"index": i, "id": _call_id(c, i, "call"),
                                          "type": "function",
                                          "function": {"name": c.name, "arguments": ""}}]}))
        out += [chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]})
                for p in _pieces(_arguments(c), step.chunk_chars)]
    out.append(chunk({}, _finish(step)))
    if include_usage:
        out.append(_sse({"id": "chatcmpl-fake", "object": "chat.completion.chunk",
                         "created": 0, "model": model, "choices": [],
                         "usage": _openai_usage(step)}))
    out.append(b"data: [DONE]\n\n")
    return out


_STOP = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}


def _anthropic_usage(step: Reply) -> dict[str, Any]:
    return {"input_tokens": step.prompt_tokens - step.cached_tokens,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": step.cached_tokens,
            "output_tokens": step.completion_tokens}


def _tool_input(call: ToolCall) -> Any:
    return json.loads(call.arguments) if isinstance(call.arguments, str) else call.arguments


def _anthropic_body(step: Reply, model: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": step.text}] if step.text else []
    content += [{"type": "tool_use", "id": _call_id(c, i, "toolu"), "name": c.name,
                 "input": _tool_input(c)} for i, c in enumerate(step.tool_calls)]
    return {"id": "msg_fake", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": _STOP.get(_finish(step), _finish(step)),
            "stop_sequence": None, "usage": _anthropic_usage(step)}


def _anthropic_stream(step: Reply, model: str) -> list[bytes]:
    usage = _anthropic_usage(step)
    start = {**_anthropic_body(step, model), "content": [], "stop_reason": None,
             "usage": {**usage, "output_tokens": 1}}
    out = [_sse({"type": "message_start", "message": start}, "message_start"),
           _sse({"type": "ping"}, "ping")]
    index = 0
    if step.text:
        out.append(_sse({"type": "content_block_start", "index": 0,
                         "content_block": {"type": "text", "text": ""}}, "content_block_start"))
        out += [_sse({"type": "content_block_delta", "index": 0,
                      "delta": {"type": "text_delta", "text": p}}, "content_block_delta")
                for p in _pieces(step.text, step.chunk_chars)]
        out.append(_sse({"type": "content_block_stop", "index": 0}, "content_block_stop"))
        index = 1
    for i, c in enumerate(step.tool_calls):
        block = {"type": "tool_use", "id": _call_id(c, i, "toolu"), "name": c.name, "input": {}}
        out.append(_sse({"type": "content_block_start", "index": index,
                         "content_block": block}, "content_block_start"))
        out += [_sse({"type": "content_block_delta", "index": index,
                      "delta": {"type": "input_json_delta", "partial_json": p}},
                     "content_block_delta")
                for p in _pieces(json.dumps(_tool_input(c)), step.chunk_chars)]
        out.append(_sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
        index += 1
    out.append(_sse({"type": "message_delta",
                     "delta": {"stop_reason": _STOP.get(_finish(step), _finish(step)),
                               "stop_sequence": None},
                     "usage": {"output_tokens": step.completion_tokens}}, "message_delta"))
    out.append(_sse({"type": "message_stop"}, "message_stop"))
    return out
