"""The :class:`Provider` contract: everything loomctx knows about one wire format.

A wire format is how a request and its reply look on the network (OpenAI Chat Completions,
Anthropic Messages). Everything that differs between formats is asked of its provider, found by
name in :mod:`loomctx.providers.registry`; the builder, the counters, the model clients and the
proxy hold no format's knowledge of their own. A new wire format is one module that implements
this protocol plus one :func:`~loomctx.providers.registry.register` call.

Contract:

- ``name`` is the format name builds, models and the proxy use; ``variants`` maps further
  format names to a default placement (OpenAI-compatible servers with strict chat templates are
  ``openai_strict``, a setting of the OpenAI provider, not a provider of its own).
- ``counting`` prices a request additively (:class:`CountingRules`); ``renderer`` returns a
  :class:`~loomctx.providers.layout.Renderer` whose token counts use it; ``tools`` writes
  OpenAI-shaped tool definitions (the shape loomctx keeps) in the format's own.
- ``check(payload)`` lists the structural problems of a rendered request, one line each (``[]``:
  valid); every rendered payload passes it.
- ``parse_reply(raw)`` reads a whole reply body, ``stream_reply()`` joins a streamed one (fed
  event by event); both give the same :class:`~loomctx.providers.reply.ModelResponse` in the
  OpenAI message shape, or raise :class:`~loomctx.errors.ModelResponseError` naming what could
  not be read.
- ``context_length(body)`` reads the provider's "input too long" error as (limit, requested);
  None for any other body.
- The proxy's part: ``read_request`` (system text and conversation as stored messages),
  ``request_tools`` (tool definitions in the OpenAI shape loomctx counts), ``is_last`` (the
  event that ends a stream), ``error_event`` (an error in the stream's shape).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from loomctx.providers._chat import ChatCount
from loomctx.providers.layout import Renderer
from loomctx.providers.reply import ModelResponse
from loomctx.providers.sse import Event

Count = Callable[[str], int]
"""Tokens of a bare string (the chat counter's cached text counter)."""


def dump(value: Any) -> str:
    """Compact JSON, as the counting rules price a non-text value."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


class CountingRules(Protocol):
    """A format's token arithmetic on top of a text counter. The rules are additive, which
    lets the packer price each item once::

        request == reply_priming + system(s) + sum(message(m)) + tools_overhead + sum(tool(d))
    """

    reply_priming: int
    """Tokens the reply is primed with."""

    def tools_overhead(self, count: Count) -> int:
        """The fixed cost of a request with at least one tool."""
        ...

    def message(self, msg: Mapping[str, Any], count: Count) -> int:
        """One message in the format's own shape, its framing included."""
        ...

    def system(self, system: str | Sequence[Mapping[str, Any]], count: Count) -> int:
        """A non-empty system prompt given apart from the messages."""
        ...

    def tool(self, tool_def: Mapping[str, Any], count: Count) -> int:
        """One tool definition (OpenAI, bare-function or Anthropic shape)."""
        ...


class StreamReply(Protocol):
    """Joins one streamed reply; each ``add``/``feed`` returns (new text, a tool call began)."""

    def feed(self, event: str, data: str) -> tuple[str, bool]:
        """One server-sent event as it came (``event`` name, ``data`` text)."""
        ...

    def add(self, obj: Any) -> tuple[str, bool]:
        """One event already decoded from JSON (what an official SDK yields)."""
        ...

    def response(self) -> ModelResponse:
        """The reply a non-streamed call would have returned."""
        ...


@runtime_checkable
class Provider(Protocol):
    """One wire format (see the module docstring for the contract)."""

    name: str
    label: str
    """How errors name the other side: ``"OpenAI-compatible API"``."""
    key_env: str
    """The environment variable a client reads its API key from."""
    path: str
    """The route the format is served at: ``/v1/chat/completions``."""
    counting: CountingRules
    default_placement: str
    variants: Mapping[str, str]
    requires_max_tokens: bool
    default_headers: Mapping[str, str]
    """Headers a request needs when its caller gives none (``anthropic-version``)."""
    forward_headers: tuple[str, ...]
    """Client headers a proxy passes upstream (``openai-organization``)."""

    def renderer(self, chat: ChatCount, placement: str) -> Renderer: ...

    def check(self, payload: Mapping[str, Any]) -> list[str]: ...

    def tools(self, tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """OpenAI-shaped tool definitions (what loomctx keeps) in this format's shape."""
        ...

    def parse_reply(self, raw: Any) -> ModelResponse: ...

    def stream_reply(self) -> StreamReply: ...

    def context_length(self, body: Any) -> tuple[int | None, int | None] | None: ...

    def auth_headers(self, key: str) -> dict[str, str]: ...

    def read_request(self, body: Mapping[str, Any]) -> tuple[str | None, list[dict[str, Any]]]:
        ...

    def request_tools(self, tools: list[Any]) -> list[Any]: ...

    def usage_fields(self, body: Mapping[str, Any]) -> dict[str, Any] | None:
        """Fields that make a stream report its usage when ``body`` did not ask for it
        (None: ``body`` is not a stream, or already asks, or the format always reports)."""
        ...

    def is_usage_only(self, event: Event) -> bool: ...

    def is_last(self, event: Event) -> bool: ...

    def error_event(self, message: str, type_: str = "api_error") -> bytes: ...


__all__ = ["Count", "CountingRules", "Provider", "StreamReply", "dump"]
