"""An OpenAI Chat Completions client, for OpenAI and the local servers that speak its API.

vLLM, the llama.cpp server and Ollama expose the same ``/v1/chat/completions``; point
``base_url`` at them and leave the key unset::

    OpenAIChatModel("gpt-4o-mini")                                   # key from OPENAI_API_KEY
    OpenAIChatModel("llama3.1", base_url="http://localhost:11434/v1")             # Ollama
    OpenAIChatModel("qwen2.5-7b", base_url="http://localhost:8080/v1")  # llama.cpp server

The reply is kept as the provider sent it: the tool-call ids, names and argument strings come
back byte for byte, since the next request must pair each tool result with its call's id.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import httpx

from loomctx.errors import ModelResponseError
from loomctx.models._http import (
    DEFAULT_BACKOFF,
    Backoff,
    Sleep,
    Transport,
    preview,
    raise_for,
    raise_sdk_error,
)
from loomctx.models.protocol import ModelResponse, StreamEvent, Usage

_PROVIDER = "OpenAI-compatible API"


class OpenAIChatModel:
    """A :class:`~loomctx.models.protocol.ChatModel` over ``POST {base_url}/chat/completions``.

    ``sdk_client`` takes an ``openai.AsyncOpenAI`` you already have (install ``openai``
    yourself; loomctx does not depend on it): calls then go through it, with the SDK's own
    retries, and its errors are mapped to loomctx's.
    """

    format = "openai"

    def __init__(self, model: str, *, base_url: str = "https://api.openai.com/v1",
                 api_key: str | None = None, timeout: float = 60.0, max_retries: int = 3,
                 backoff: Backoff = DEFAULT_BACKOFF, client: httpx.AsyncClient | None = None,
                 sdk_client: Any = None, max_tokens_field: str = "max_tokens",
                 stream_usage: bool = True,
                 sleep: Sleep | None = None, random: Callable[[], float] | None = None,
                 headers: Mapping[str, str] | None = None) -> None:
        self.model = model
        self.max_tokens_field = max_tokens_field
        """``max_tokens``, or ``max_completion_tokens`` for models that require it."""
        self.stream_usage = stream_usage
        """Ask for usage at the end of a stream (``stream_options.include_usage``); turn off
        for a server that rejects the option."""
        self.sdk_client = sdk_client
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        all_headers = {"content-type": "application/json", **(headers or {})}
        if key:
            all_headers["authorization"] = f"Bearer {key}"
        self._http = Transport(provider=_PROVIDER, base_url=base_url, headers=all_headers,
                               key_env="OPENAI_API_KEY", timeout=timeout,
                               max_retries=max_retries, backoff=backoff, client=client,
                               sleep=sleep, random=random)

    def _body(self, payload: Mapping[str, Any], max_tokens: int | None) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, **payload}
        if max_tokens is not None:
            body[self.max_tokens_field] = max_tokens
        return body

    async def complete(self, payload: Mapping[str, Any], *,
                       max_tokens: int | None = None) -> ModelResponse:
        body = self._body(payload, max_tokens)
        if self.sdk_client is not None:
            raw = _dump(await _sdk_call(self.sdk_client, body))
        else:
            raw = await self._http.post("/chat/completions", body)
        return parse_completion(raw)

    async def stream(self, payload: Mapping[str, Any], *,
                     max_tokens: int | None = None) -> AsyncIterator[StreamEvent]:
        body = self._body(payload, max_tokens)
        body["stream"] = True
        if self.stream_usage:
            body.setdefault("stream_options", {"include_usage": True})
        acc = _Accumulator()
        if self.sdk_client is not None:
            chunks: AsyncIterator[Any] = _sdk_chunks(self.sdk_client, body)
        else:
            chunks = _sse_chunks(self._http.events("/chat/completions", body))
        async for chunk in chunks:
            text, new_call = acc.add(chunk)
            if text:
                yield StreamEvent(kind="text", text=text)
            if new_call:
                yield StreamEvent(kind="tool_call")
        yield StreamEvent(kind="done", response=acc.response())


async def _sse_chunks(events: AsyncIterator[tuple[str, str]]) -> AsyncIterator[Any]:
    done = False
    async for _, data in events:  # read to the end so the connection closes here
        if done or data.strip() == "[DONE]":
            done = True
            continue
        try:
            chunk = json.loads(data)
        except (ValueError, RecursionError) as exc:
            raise ModelResponseError(f"{_PROVIDER} streamed a chunk that is not JSON: "
                                     f"{data[:120]!r}") from exc
        if isinstance(chunk, dict) and "error" in chunk:
            raise_for(_PROVIDER, None, chunk, key_env="OPENAI_API_KEY")
        yield chunk


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
    calls = msg.get("tool_calls") or []
    if not isinstance(calls, list):
        raise ModelResponseError(f"{_PROVIDER} sent tool_calls that are not a list: "
                                 f"{preview(calls, 120)!r}")
    return ModelResponse(message=_message(_text(msg.get("content"), "content"),
                                          [_tool_call(c) for c in calls]),
                         usage=_usage(raw.get("usage")),
                         finish_reason=_reason(choice.get("finish_reason")), raw=raw)


class _Accumulator:
    """Joins streamed deltas into the message a non-streamed call would have returned."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish: str | None = None
        self.usage = Usage()
        self.chunks: list[Any] = []

    def add(self, chunk: Any) -> tuple[str, bool]:
        self.chunks.append(chunk)
        if not isinstance(chunk, Mapping):
            raise ModelResponseError(f"{_PROVIDER} streamed a chunk that is not an object: "
                                     f"{preview(chunk, 120)!r}")
        if chunk.get("usage"):
            self.usage = _usage(chunk["usage"])
        text, new_call = "", False
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise ModelResponseError(f"{_PROVIDER} streamed choices that are not a list: "
                                     f"{preview(choices, 120)!r}")
        for choice in choices:
            delta = choice.get("delta") if isinstance(choice, Mapping) else None
            if not isinstance(choice, Mapping) or not isinstance(delta, Mapping | None):
                raise ModelResponseError(f"{_PROVIDER} streamed a choice without a delta "
                                         f"object: {preview(choice, 120)!r}")
            delta = delta or {}
            piece = _text(delta.get("content"), "a content delta")
            if piece:
                text += piece
            calls = delta.get("tool_calls") or []
            if not isinstance(calls, list):
                raise ModelResponseError(f"{_PROVIDER} streamed tool_calls that are not a "
                                         f"list: {preview(calls, 120)!r}")
            for tc in calls:
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


def _dump(obj: Any) -> Any:
    """An SDK object as the plain JSON the HTTP API would have sent."""
    return obj.model_dump() if hasattr(obj, "model_dump") else obj


async def _sdk_call(sdk: Any, body: dict[str, Any]) -> Any:
    try:
        return await sdk.chat.completions.create(**body)
    except Exception as exc:
        raise_sdk_error(exc, _PROVIDER, "OPENAI_API_KEY")
        raise


async def _sdk_chunks(sdk: Any, body: dict[str, Any]) -> AsyncIterator[Any]:
    try:
        async for chunk in await sdk.chat.completions.create(**body):
            yield _dump(chunk)
    except Exception as exc:
        raise_sdk_error(exc, _PROVIDER, "OPENAI_API_KEY")
        raise


__all__ = ["OpenAIChatModel", "parse_completion"]
