"""Reading Anthropic Messages replies into the OpenAI message shape loomctx stores.

Text blocks join into ``content``, each ``tool_use`` block becomes a tool call with the same
``id`` and ``name`` and its ``input`` as a JSON string, and the stop reason is mapped. Usage is
normalised too: Anthropic counts cache reads apart from ``input_tokens``; here
``prompt_tokens`` includes them, as OpenAI's does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from loomctx.errors import ModelResponseError
from loomctx.providers.errors import error_fields, preview, raise_for
from loomctx.providers.reply import ModelResponse, Usage

_PROVIDER = "Anthropic API"
KEY_ENV = "ANTHROPIC_API_KEY"
_TOO_LONG = re.compile(r"prompt is too long: (\d+) tokens > (\d+)")
_SUM = re.compile(r"exceed context limit: (\d+) \+ (\d+) > (\d+)")

STOP_REASONS = {"tool_use": "tool_calls", "end_turn": "stop", "stop_sequence": "stop",
                "max_tokens": "length", "pause_turn": "stop", "refusal": "content_filter"}
"""Anthropic ``stop_reason`` → OpenAI ``finish_reason``."""

def context_length(body: Any) -> tuple[int | None, int | None] | None:
    """(limit, requested) of an Anthropic "prompt is too long" error."""
    message, _ = error_fields(body)
    if m := _TOO_LONG.search(message):
        return int(m.group(2)), int(m.group(1))
    if m := _SUM.search(message):
        return int(m.group(3)), int(m.group(1)) + int(m.group(2))
    return None


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


class AnthropicStream:
    """Joins stream events into the reply a non-streamed call would have returned."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.parts: dict[int, list[str]] = {}
        self.stop: str | None = None
        self.usage = Usage()
        self.events: list[Any] = []

    def feed(self, event: str, data: str) -> tuple[str, bool]:
        try:
            obj = json.loads(data)
        except (ValueError, RecursionError) as exc:
            raise ModelResponseError(f"{_PROVIDER} streamed a {event!r} event that is not "
                                     f"JSON: {data[:120]!r}") from exc
        return self.add(obj)

    def add(self, event: Any) -> tuple[str, bool]:
        self.events.append(event)
        if not isinstance(event, Mapping):
            raise ModelResponseError(f"{_PROVIDER} streamed an event that is not an object: "
                                     f"{preview(event, 120)!r}")
        kind = event.get("type")
        if kind == "error":
            raise_for(_PROVIDER, None, event, key_env=KEY_ENV)
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


__all__ = ["KEY_ENV", "STOP_REASONS", "AnthropicStream", "context_length", "parse_message"]
