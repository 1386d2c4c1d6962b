"""A :class:`~loomctx.models.protocol.ChatModel` over any registered wire format's HTTP API.

The one model-call path: the request goes out through :class:`~loomctx.models._http.Transport`
(the one retry policy), the reply is read by the format's provider (``parse_reply``, or
``stream_reply`` fed the events of the one SSE reader) and a failure is mapped by
:mod:`loomctx.providers.errors`. The proxy reads its upstream's replies and errors with the same
provider code. :class:`~loomctx.models.openai.OpenAIChatModel` and
:class:`~loomctx.models.anthropic.AnthropicChatModel` are this class with their format's
request fields; a newly registered format can be called as it is::

    WireChatModel("toy-1", provider="toy", base_url="http://localhost:8000")
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import httpx

from loomctx import providers
from loomctx.models._http import DEFAULT_BACKOFF, Backoff, Sleep, Transport
from loomctx.models.protocol import ModelResponse, StreamEvent
from loomctx.providers.errors import raise_sdk_error
from loomctx.providers.protocol import StreamReply


class WireChatModel:
    """Calls ``POST {base_url}{path}`` (``path``: the provider's own route by default).

    The API key is ``api_key`` or the provider's environment variable, sent as the provider's
    auth header. ``sdk_client`` takes an official SDK's async client you already have: calls
    then go through it (with the SDK's own retries) and its errors are mapped to loomctx's.
    """

    def __init__(self, model: str, *, provider: str, base_url: str, path: str | None = None,
                 api_key: str | None = None, timeout: float = 60.0, max_retries: int = 3,
                 backoff: Backoff = DEFAULT_BACKOFF, client: httpx.AsyncClient | None = None,
                 sdk_client: Any = None, sleep: Sleep | None = None,
                 random: Callable[[], float] | None = None,
                 headers: Mapping[str, str] | None = None) -> None:
        self.wire = providers.get(provider)
        self.format = self.wire.name
        self.model = model
        self.path = path if path is not None else self.wire.path
        self.sdk_client = sdk_client
        key = api_key if api_key is not None else os.environ.get(self.wire.key_env)
        all_headers = {"content-type": "application/json", **(headers or {})}
        if key:
            all_headers.update(self.wire.auth_headers(key))
        self._http = Transport(provider=self.wire.label, base_url=base_url, headers=all_headers,
                               key_env=self.wire.key_env, timeout=timeout,
                               max_retries=max_retries, backoff=backoff, client=client,
                               sleep=sleep, random=random)

    def _body(self, payload: Mapping[str, Any], max_tokens: int | None) -> dict[str, Any]:
        """The request body (a format's client adds its own fields)."""
        body: dict[str, Any] = {"model": self.model, **payload}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        return body

    def _stream_body(self, payload: Mapping[str, Any], max_tokens: int | None
                     ) -> dict[str, Any]:
        return {**self._body(payload, max_tokens), "stream": True}

    def _sdk_create(self) -> Callable[..., Any]:
        """The SDK call that sends a request (its ``create`` method)."""
        raise NotImplementedError(f"{type(self).__name__} takes no sdk_client")

    async def complete(self, payload: Mapping[str, Any], *,
                       max_tokens: int | None = None) -> ModelResponse:
        body = self._body(payload, max_tokens)
        if self.sdk_client is not None:
            try:
                raw = _dump(await self._sdk_create()(**body))
            except Exception as exc:
                raise_sdk_error(exc, self.wire.label, self.wire.key_env)
                raise
        else:
            raw = await self._http.post(self.path, body)
        return self.wire.parse_reply(raw)

    async def stream(self, payload: Mapping[str, Any], *,
                     max_tokens: int | None = None) -> AsyncIterator[StreamEvent]:
        body = self._stream_body(payload, max_tokens)
        reply = self.wire.stream_reply()
        parts = (self._sdk_parts(body, reply) if self.sdk_client is not None
                 else self._http_parts(body, reply))
        async for text, new_call in parts:
            if text:
                yield StreamEvent(kind="text", text=text)
            if new_call:
                yield StreamEvent(kind="tool_call")
        yield StreamEvent(kind="done", response=reply.response())

    async def _http_parts(self, body: dict[str, Any], reply: StreamReply
                          ) -> AsyncIterator[tuple[str, bool]]:
        async for event, data in self._http.events(self.path, body):
            yield reply.feed(event, data)  # read to the end so the connection closes here

    async def _sdk_parts(self, body: dict[str, Any], reply: StreamReply
                         ) -> AsyncIterator[tuple[str, bool]]:
        try:
            async for obj in await self._sdk_create()(**body):
                yield reply.add(_dump(obj))
        except Exception as exc:
            raise_sdk_error(exc, self.wire.label, self.wire.key_env)
            raise


def _dump(obj: Any) -> Any:
    """An SDK object as the plain JSON the HTTP API would have sent."""
    return obj.model_dump() if hasattr(obj, "model_dump") else obj


__all__ = ["WireChatModel"]
