"""The :class:`ChatModel` contract: one chat call to a model, whole or streamed.

A model takes the payload a build rendered for its format (OpenAI: ``messages`` + ``tools``;
Anthropic: ``system`` + ``messages`` + ``tools``) and answers with one assistant message in the
OpenAI shape (``role``, ``content``, ``tool_calls`` with their ids and names), whatever the wire
format, so a :class:`~loomctx.session.Session` stores every reply the same way. The reply types
live with the providers, which read them (:mod:`loomctx.providers.reply`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from loomctx.providers.reply import ModelResponse, Usage


@dataclass(frozen=True, kw_only=True)
class StreamEvent:
    """A piece of a streamed reply; the last event has ``kind="done"`` and the response."""

    kind: Literal["text", "tool_call", "done"]
    text: str = ""
    """A text delta (``kind="text"``)."""
    response: ModelResponse | None = None
    """The whole reply (``kind="done"``), as :meth:`ChatModel.complete` would return it."""


@runtime_checkable
class ChatModel(Protocol):
    """A chat model behind some API.

    Contract:
    - ``format`` names the payload shape it takes (a registered build format: ``openai`` or
      ``anthropic``); build with that format.
    - ``complete`` sends one request and returns the reply; ``stream`` yields text deltas and
      ends with one ``done`` event carrying the same :class:`ModelResponse`.
    - Transient failures (429, 5xx, timeouts) are retried inside the client; what still fails
      raises a :class:`~loomctx.errors.ModelError` subclass: ``ContextLengthError`` when the
      provider says the input is too long (with the limit it reported, when it did),
      ``RateLimitError`` when retries ran out on 429s, ``ModelResponseError`` for a reply that
      cannot be read.
    - Tool-call ids and names in the reply are the provider's, unchanged.
    """

    format: str
    model: str

    async def complete(self, payload: Mapping[str, Any], *,
                       max_tokens: int | None = None) -> ModelResponse: ...

    def stream(self, payload: Mapping[str, Any], *,
               max_tokens: int | None = None) -> AsyncIterator[StreamEvent]: ...


__all__ = ["ChatModel", "ModelResponse", "StreamEvent", "Usage"]
