"""An Anthropic Messages client whose replies come back in the OpenAI message shape.

A :class:`~loomctx.session.Session` stores every reply one way, so the Messages reply is
converted by the Anthropic provider (:mod:`loomctx.providers.anthropic.reply`): text blocks
join into ``content``, each ``tool_use`` block becomes a tool call with the same ``id`` and
``name``, the stop reason is mapped and cache reads count in ``prompt_tokens``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import httpx

from loomctx.models._http import DEFAULT_BACKOFF, Backoff, Sleep
from loomctx.models.wire import WireChatModel
from loomctx.providers.anthropic import VERSION
from loomctx.providers.anthropic.reply import STOP_REASONS, parse_message


class AnthropicChatModel(WireChatModel):
    """A :class:`~loomctx.models.protocol.ChatModel` over ``POST {base_url}/v1/messages``.

    Anthropic requires ``max_tokens``: ``default_max_tokens`` is sent when a call gives none.
    ``sdk_client`` takes an ``anthropic.AsyncAnthropic`` you already have (install
    ``anthropic`` yourself; loomctx does not depend on it).
    """

    format = "anthropic"

    def __init__(self, model: str, *, base_url: str = "https://api.anthropic.com",
                 api_key: str | None = None, anthropic_version: str = VERSION,
                 default_max_tokens: int = 1024, timeout: float = 60.0, max_retries: int = 3,
                 backoff: Backoff = DEFAULT_BACKOFF, client: httpx.AsyncClient | None = None,
                 sdk_client: Any = None, sleep: Sleep | None = None,
                 random: Callable[[], float] | None = None,
                 headers: Mapping[str, str] | None = None) -> None:
        super().__init__(model, provider="anthropic", base_url=base_url, api_key=api_key,
                         timeout=timeout, max_retries=max_retries, backoff=backoff,
                         client=client, sdk_client=sdk_client, sleep=sleep, random=random,
                         headers={"anthropic-version": anthropic_version, **(headers or {})})
        self.default_max_tokens = default_max_tokens

    def _body(self, payload: Mapping[str, Any], max_tokens: int | None) -> dict[str, Any]:
        return {"model": self.model,
                "max_tokens": max_tokens if max_tokens is not None else self.default_max_tokens,
                **payload}

    def _sdk_create(self) -> Callable[..., Any]:
        return self.sdk_client.messages.create  # type: ignore[no-any-return]


__all__ = ["AnthropicChatModel", "STOP_REASONS", "parse_message"]
