"""An Anthropic Messages client whose replies come back in the OpenAI message shape.

A :class:`~loomctx.session.Session` stores every reply one way, so the Messages reply is
converted: text blocks join into ``content``, each ``tool_use`` block becomes a tool call with
the same ``id`` and ``name`` and its ``input`` as a JSON string, and the stop reason is mapped.
Usage is normalised too: Anthropic counts cache reads apart from ``input_tokens``; here
``prompt_tokens`` includes them, as OpenAI's does.
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

_PROVIDER = "Anthropic API"
_KEY_ENV = "ANTHROPIC_API_KEY"

STOP_REASONS = {"tool_use": "tool_calls", "end_turn": "stop", "stop_sequence": "stop",
                "max_tokens": "length", "pause_turn": "stop", "refusal": "content_filter"}
"""Anthropic ``stop_reason`` → OpenAI ``finish_reason``."""


class AnthropicChatModel:
    """A :class:`~loomctx.models.protocol.ChatModel` over ``POST {base_url}/v1/messages``.

    Anthropic requires ``max_tokens``: ``default_max_tokens`` is sent when a call gives none.
    ``sdk_client`` takes an ``anthropic.AsyncAnthropic`` you already have (install
    ``anthropic`` yourself; loomctx does not depend on it).
    """

    format = "anthropic"

    def __init__(self, model: str, *, base_url: str = "https://api.anthropic.com",
                 api_key: str | None = None, anthropic_version: str = "2023-06-01",
                 default_max_tokens: int = 1024, timeout: float = 60.0, max_retries: int = 3,
                 backoff: Backoff = DEFAULT_BACKOFF, client: httpx.AsyncClient | None = None,
                 sdk_client: Any = None, sleep: Sleep | None = None,
                 random: Callable[[], float] | None = None,
                 headers: Mapping[str, str] | None = None) -> None:
        self.model = model
        self.default_max_tokens = default_max_tokens
        self.sdk_client = sdk_client
        key = api_key if api_key is not None else os.environ.get(_KEY_ENV)
        all_headers = {"content-type": "application/json",
                       "anthropic-version": anthropic_version, **(headers or {})}
        if key:
            all_headers["x-api-key"] = key
        self._http = Transport(provider=_PROVIDER, base_url=base_url, headers=all_headers,
                               key_env=_KEY_ENV, timeout=timeout, max_retries=max_retries,
                               backoff=backoff, client=client, sleep=sleep, random=random)

    def _body(self, payload: Mapping[str, Any], max_tokens: int | None) -> dict[str, Any]:
        return {"model": self.model,
                "max_tokens": max_tokens if max_tokens is not None else self.default_max_tokens,
                **payload}

    async def complete(self, payload: Mapping[str, Any], *,
                       max_tokens: int | None = None) -> ModelResponse:
        body = self._body(payload, max_tokens)
        if self.sdk_client is not None:
            try:
                raw = _dump(await self.sdk_client.messages.create(**body))
            except Exception as exc:
                raise_sdk_error(exc, _PROVIDER, _KEY_ENV)
                raise
        else:
            raw = await self._http.post("/v1/messages", body)
        return parse_message(raw)

    async def stream(self, payload: Mapping[str, Any], *,
                     max_tokens: int | None = None) -> AsyncIterator[StreamEvent]:
        body = {**self._body(payload, max_tokens), "stream": True}
        acc = _Accumulator()
        events = (_sdk_events(self.sdk_client, body) if self.sdk_client is not None
                  else _sse_events(self._http.events("/v1/messages", body)))
        async for event in events:
            text, new_call = acc.add(event)
            if text:
                yield StreamEvent(kind="text", text=text)
            if new_call:
                yield StreamEvent(kind="tool_call")
        yield StreamEvent(kind="done", response=acc.response())


def _count(value: Any) -> int | None:
    """A token count as reported (None when absent or not a non-negative int)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
        else None


def _usage(raw: Any, base: Usage | None = None) -> Usage:
    """Usage from a ``usage`` object; fields it lacks keep ``base``'s (stream deltas)."""
    base = base or Usage()
    if not isinstance(raw, Mapping):
        return base
    fresh = _count(raw.get("input_tokens"))
    read = _count(raw.get("cache_read_input_tokens"))
    written = _count(raw.get("cache_creation_input_tokens"))
    if fresh is None and read is None and written is None:
        prompt, cached = base.prompt_tokens, base.cached_tokens
    else:
        prompt = (fresh or 0) + (read or 0) + (written or 0)
        cached = read or 0
    output = _count(raw.get("output_tokens"))
    return Usage(prompt_tokens=prompt, cached_tokens=cached,
                 completion_tokens=output if output is not None else base.completion_tokens)


def _message(texts: list[str], calls: list[dict[str, Any]]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        message["tool_calls"] = calls
    return message


def _call(block: Mapping[str, Any], arguments: str) -> dict[str, Any]:
    ident, name = block.get("id"), block.get("name")
    if not isinstance(ident, str) or not isinstance(name, str):
        raise ModelResponseError(f"{_PROVIDER} sent a tool_use block without a string id and "
                                 f"name: {preview(block, 120)!r}")
    return {"id": ident, "type": "function", "function": {"name": name, "arguments": arguments}}


def _stop(value: Any) -> str | None:
    """Anthropic's stop reason in OpenAI's words (None when there is no readable one)."""
    return STOP_REASONS.get(value, value) if isinstance(value, str) else None


def parse_message(raw: Any) -> ModelResponse:
    """A Messages response body → :class:`ModelResponse` in the OpenAI shape.

    A body without a list of content blocks, or with a block that is not an object, a text
    that is not a string or a tool use without its id and name, is a
    :class:`ModelResponseError` naming it."""
    blocks = raw.get("content") if isinstance(raw, Mapping) else None
    if not isinstance(blocks, list) or not all(isinstance(b, Mapping) for b in blocks):
        raise ModelResponseError(f"{_PROVIDER} reply has no readable content blocks: "
                                 f"{preview(raw, 200)!r}")
    texts = [b.get("text") for b in blocks if b.get("type") == "text"]
    if not all(isinstance(t, str) for t in texts):
        raise ModelResponseError(f"{_PROVIDER} sent a text block whose text is not a string: "
                                 f"{preview(raw, 200)!r}")
    calls = [_call(b, json.dumps(b.get("input") or {}))
             for b in blocks if b.get("type") == "tool_use"]
    return ModelResponse(message=_message(texts, calls), usage=_usage(raw.get("usage")),
                         finish_reason=_stop(raw.get("stop_reason")), raw=raw)


async def _sse_events(events: AsyncIterator[tuple[str, str]]) -> AsyncIterator[Any]:
    async for name, data in events:
        try:
            event = json.loads(data)
        except (ValueError, RecursionError) as exc:
            raise ModelResponseError(f"{_PROVIDER} streamed a {name!r} event that is not "
                                     f"JSON: {data[:120]!r}") from exc
        yield event


async def _sdk_events(sdk: Any, body: dict[str, Any]) -> AsyncIterator[Any]:
    try:
        async for event in await sdk.messages.create(**body):
            yield _dump(event)
    except Exception as exc:
        raise_sdk_error(exc, _PROVIDER, _KEY_ENV)
        raise


class _Accumulator:
    """Joins stream events into the reply a non-streamed call would have returned."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.parts: dict[int, list[str]] = {}
        self.stop: str | None = None
        self.usage = Usage()
        self.events: list[Any] = []

    def add(self, event: Any) -> tuple[str, bool]:
        self.events.append(event)
        if not isinstance(event, Mapping):
            raise ModelResponseError(f"{_PROVIDER} streamed an event that is not an object: "
                                     f"{preview(event, 120)!r}")
        kind = event.get("type")
        if kind == "error":
            raise_for(_PROVIDER, None, event, key_env=_KEY_ENV)
        if kind == "message_start":
            message = event.get("message")
            self.usage = _usage(message.get("usage") if isinstance(message, Mapping) else None)
        elif kind == "content_block_start":
            index, block = event.get("index"), event.get("content_block")
            if not isinstance(index, int) or isinstance(index, bool) or \
                    not isinstance(block, Mapping):
                raise ModelResponseError(f"{_PROVIDER} streamed an unreadable "
                                         f"content_block_start: {preview(event, 120)!r}")
            self.blocks[index] = dict(block)
            text = block.get("text", "")
            self.parts[index] = [text if isinstance(text, str) else ""]
            return self.parts[index][0], block.get("type") == "tool_use"
        elif kind == "content_block_delta":
            index, delta = event.get("index"), event.get("delta") or {}
            if not isinstance(index, int) or isinstance(index, bool) or \
                    not isinstance(delta, Mapping):
                raise ModelResponseError(f"{_PROVIDER} streamed an unreadable "
                                         f"content_block_delta: {preview(event, 120)!r}")
            piece = delta.get("text") if delta.get("type") == "text_delta" else (
                delta.get("partial_json") if delta.get("type") == "input_json_delta" else None)
            if piece is not None and not isinstance(piece, str):
                raise ModelResponseError(f"{_PROVIDER} streamed a delta that is not text: "
                                         f"{preview(event, 120)!r}")
            if piece:
                self.parts.setdefault(index, []).append(piece)
                if delta["type"] == "text_delta":
                    return piece, False
        elif kind == "message_delta":
            delta = event.get("delta")
            stop = delta.get("stop_reason") if isinstance(delta, Mapping) else None
            self.stop = (stop if isinstance(stop, str) else None) or self.stop
            self.usage = _usage(event.get("usage"), self.usage)
        return "", False

    def response(self) -> ModelResponse:
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        for index in sorted(self.blocks):
            block, joined = self.blocks[index], "".join(self.parts.get(index, []))
            if block.get("type") == "text":
                texts.append(joined)
            elif block.get("type") == "tool_use":
                try:
                    arguments = json.loads(joined) if joined.strip() else (block.get("input")
                                                                           or {})
                except (ValueError, RecursionError) as exc:
                    raise ModelResponseError(f"{_PROVIDER} streamed tool input that is not "
                                             f"JSON: {joined[:120]!r}") from exc
                calls.append(_call(block, json.dumps(arguments)))
        return ModelResponse(message=_message(texts, calls), usage=self.usage,
                             finish_reason=_stop(self.stop),
                             raw={"events": self.events})


def _dump(obj: Any) -> Any:
    return obj.model_dump() if hasattr(obj, "model_dump") else obj


__all__ = ["AnthropicChatModel", "STOP_REASONS", "parse_message"]
