"""An OpenAI Chat Completions client, for OpenAI and the local servers that speak its API.

vLLM, the llama.cpp server and Ollama expose the same ``/v1/chat/completions``; point
``base_url`` at them and leave the key unset::

    OpenAIChatModel("gpt-4o-mini")                                   # key from OPENAI_API_KEY
    OpenAIChatModel("llama3.1", base_url="http://localhost:11434/v1")             # Ollama
    OpenAIChatModel("qwen2.5-7b", base_url="http://localhost:8080/v1")  # llama.cpp server

The reply is read by the OpenAI provider (:mod:`loomctx.providers.openai.reply`): the tool-call
ids, names and argument strings come back byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import httpx

from loomctx.models._http import DEFAULT_BACKOFF, Backoff, Sleep
from loomctx.models.wire import WireChatModel
from loomctx.providers.openai.reply import parse_completion


class OpenAIChatModel(WireChatModel):
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
        super().__init__(model, provider="openai", base_url=base_url, path="/chat/completions",
                         api_key=api_key, timeout=timeout, max_retries=max_retries,
                         backoff=backoff, client=client, sdk_client=sdk_client, sleep=sleep,
                         random=random, headers=headers)
        self.max_tokens_field = max_tokens_field
        """``max_tokens``, or ``max_completion_tokens`` for models that require it."""
        self.stream_usage = stream_usage
        """Ask for usage at the end of a stream (``stream_options.include_usage``); turn off
        for a server that rejects the option."""

    def _body(self, payload: Mapping[str, Any], max_tokens: int | None) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, **payload}
        if max_tokens is not None:
            body[self.max_tokens_field] = max_tokens
        return body

    def _stream_body(self, payload: Mapping[str, Any], max_tokens: int | None
                     ) -> dict[str, Any]:
        body = super()._stream_body(payload, max_tokens)
        if self.stream_usage:
            body.setdefault("stream_options", {"include_usage": True})
        return body

    def _sdk_create(self) -> Callable[..., Any]:
        return self.sdk_client.chat.completions.create  # type: ignore[no-any-return]


__all__ = ["OpenAIChatModel", "parse_completion"]
