"""The OpenAI Chat Completions wire format, and the OpenAI-compatible servers that speak it.

vLLM, the llama.cpp server, Ollama and TGI take the same requests; many of their chat templates
allow one leading system message and alternating roles, which the ``openai_strict`` variant (a
placement setting, :mod:`loomctx.providers.placement`) renders for. What the format knows lives
beside this module: :mod:`.render` (messages + tools), :mod:`.rules` (what the API rejects),
:mod:`.count` (what a request costs), :mod:`.reply` (whole and streamed replies, the
too-long wording) and :mod:`.request` (a request as the proxy reads it, the stream's events).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loomctx.providers._chat import ChatCount
from loomctx.providers.layout import Renderer
from loomctx.providers.openai import reply, request
from loomctx.providers.openai.count import OpenAICounting
from loomctx.providers.openai.render import OpenAIRenderer
from loomctx.providers.openai.rules import check_openai
from loomctx.providers.protocol import CountingRules
from loomctx.providers.reply import ModelResponse
from loomctx.providers.sse import Event


class OpenAIProvider:
    """:class:`~loomctx.providers.protocol.Provider` of OpenAI Chat Completions."""

    name = "openai"
    label = "OpenAI-compatible API"
    key_env = reply.KEY_ENV
    path = "/v1/chat/completions"
    counting: CountingRules = OpenAICounting()
    default_placement = "system"
    variants: Mapping[str, str] = {"openai_strict": "user_block"}
    default_headers: Mapping[str, str] = {}
    forward_headers: tuple[str, ...] = ("openai-organization", "openai-project")
    requires_max_tokens = False

    def renderer(self, chat: ChatCount, placement: str) -> Renderer:
        return OpenAIRenderer(chat, placement=placement)  # type: ignore[arg-type]

    def check(self, payload: Mapping[str, Any]) -> list[str]:
        return check_openai(payload)

    def tools(self, tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return [dict(t) for t in tools]

    def parse_reply(self, raw: Any) -> ModelResponse:
        return reply.parse_completion(raw)

    def stream_reply(self) -> reply.OpenAIStream:
        return reply.OpenAIStream()

    def context_length(self, body: Any) -> tuple[int | None, int | None] | None:
        return reply.context_length(body)

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {key}"}

    def read_request(self, body: Mapping[str, Any]) -> tuple[str | None, list[dict[str, Any]]]:
        return request.split_openai(body["messages"])

    def request_tools(self, tools: list[Any]) -> list[Any]:
        return tools

    def usage_fields(self, body: Mapping[str, Any]) -> dict[str, Any] | None:
        return request.usage_fields(body)

    def is_usage_only(self, event: Event) -> bool:
        return request.is_usage_only(event)

    def is_last(self, event: Event) -> bool:
        return request.is_last(event)

    def error_event(self, message: str, type_: str = "api_error") -> bytes:
        return request.error_event(message, type_)


PROVIDER = OpenAIProvider()

__all__ = ["PROVIDER", "OpenAIProvider"]
