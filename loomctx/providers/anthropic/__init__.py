"""The Anthropic Messages wire format: ``system`` + ``messages`` + ``tools``, content blocks,
``cache_control`` breakpoints, ``max_tokens`` required.

What the format knows lives beside this module: :mod:`.render` (blocks and cache breakpoints),
:mod:`.rules` (what the API rejects), :mod:`.count` (what a request costs), :mod:`.reply`
(whole and streamed replies into the OpenAI message shape, the too-long wording) and
:mod:`.request` (a request as the proxy reads it, the stream's events).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loomctx.errors import InputError
from loomctx.providers._chat import ChatCount
from loomctx.providers.anthropic import reply, request
from loomctx.providers.anthropic.count import AnthropicCounting
from loomctx.providers.anthropic.render import AnthropicRenderer, anthropic_tool
from loomctx.providers.anthropic.rules import check_anthropic
from loomctx.providers.layout import Renderer
from loomctx.providers.protocol import CountingRules
from loomctx.providers.reply import ModelResponse
from loomctx.providers.sse import Event

VERSION = "2023-06-01"
"""The ``anthropic-version`` header sent when the caller gives none."""


class AnthropicProvider:
    """:class:`~loomctx.providers.protocol.Provider` of the Anthropic Messages API."""

    name = "anthropic"
    label = "Anthropic API"
    key_env = reply.KEY_ENV
    path = "/v1/messages"
    counting: CountingRules = AnthropicCounting()
    default_placement = "user_block"
    variants: Mapping[str, str] = {}
    default_headers: Mapping[str, str] = {"anthropic-version": VERSION}
    forward_headers: tuple[str, ...] = ("anthropic-version", "anthropic-beta")
    requires_max_tokens = True

    def renderer(self, chat: ChatCount, placement: str) -> Renderer:
        return AnthropicRenderer(chat, placement=placement)  # type: ignore[arg-type]

    def check(self, payload: Mapping[str, Any]) -> list[str]:
        return check_anthropic(payload)

    def tools(self, tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return [anthropic_tool(t) for t in tools]

    def parse_reply(self, raw: Any) -> ModelResponse:
        return reply.parse_message(raw)

    def stream_reply(self) -> reply.AnthropicStream:
        return reply.AnthropicStream()

    def context_length(self, body: Any) -> tuple[int | None, int | None] | None:
        return reply.context_length(body)

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"x-api-key": key}

    def read_request(self, body: Mapping[str, Any]) -> tuple[str | None, list[dict[str, Any]]]:
        conversation = request.from_anthropic(body["messages"])
        if not conversation:  # a build of it would fail after storing: refused before
            raise InputError("messages hold no block loomctx can read (text, image, document, "
                             "tool_use, tool_result): a Messages request needs one",
                             where="messages")
        return request.anthropic_system(body.get("system")), conversation

    def request_tools(self, tools: list[Any]) -> list[Any]:
        return request.request_tools(tools)

    def usage_fields(self, body: Mapping[str, Any]) -> dict[str, Any] | None:
        return None  # message_start and message_delta always carry the usage

    def is_usage_only(self, event: Event) -> bool:
        return False

    def is_last(self, event: Event) -> bool:
        return request.is_last(event)

    def error_event(self, message: str, type_: str = "api_error") -> bytes:
        return request.error_event(message, type_)


PROVIDER = AnthropicProvider()

__all__ = ["PROVIDER", "VERSION", "AnthropicProvider"]
