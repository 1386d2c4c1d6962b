"""The HTTP transport every model client shares: the one retry policy, and the wire.

A provider call fails in a few ways that need different answers: a 429 or a 5xx or a timeout
passes if we wait (retried with exponential backoff and full jitter, honouring ``Retry-After``);
a context-length 400 never passes by itself (raised at once as
:class:`~loomctx.errors.ContextLengthError` with the numbers the provider gave, so the caller
can rebuild smaller); anything else is the caller's to fix (raised at once with the provider's
own message). Errors are read by :mod:`loomctx.providers.errors` and streams by
:mod:`loomctx.providers.sse`, the same code the proxy reads them with.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import json
import random as _random
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import httpx

from loomctx.errors import ConfigError, ModelError
from loomctx.providers.errors import (
    context_length,
    preview,
    raise_for,
    raise_sdk_error,
    read_json,
)
from loomctx.providers.sse import Decoder
from loomctx.retry import DEFAULT_BACKOFF, Backoff

Sleep = Callable[[float], Awaitable[None]]
"""How the client waits between attempts (``asyncio.sleep``; a test injects a recorder)."""

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 529})
"""Statuses worth another attempt (529: Anthropic's "overloaded")."""

_TRANSIENT = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds a server asked us to wait: ``retry-after-ms``, or ``Retry-After`` in seconds or
    as an HTTP date; None when absent or unreadable."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class Transport:
    """POSTs JSON to one provider with retries; one short-lived ``httpx.AsyncClient`` per call
    unless the caller gave its own (so a client works from any event loop)."""

    def __init__(self, *, provider: str, base_url: str, headers: Mapping[str, str],
                 key_env: str, timeout: float, max_retries: int, backoff: Backoff,
                 client: httpx.AsyncClient | None, sleep: Sleep | None,
                 random: Callable[[], float] | None) -> None:
        if max_retries < 0:
            raise ConfigError(f"max_retries must be >= 0, got {max_retries!r}")
        self.provider = provider
        self.base_url = base_url.rstrip("/")
        self.headers = dict(headers)
        self.key_env = key_env
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.client = client
        self.sleep: Sleep = sleep or asyncio.sleep
        self.random = random or _random.random

    def _client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(timeout=self.timeout, verify=_ssl_context())

    async def _retry_or_raise(self, attempt: int, status: int | None, body: Any,
                              headers: Mapping[str, str], problem: str | None = None) -> None:
        """Wait before the next attempt, or raise when this failure is final."""
        retryable = problem is not None or (status in RETRY_STATUSES
                                            and context_length(body) is None)
        if not retryable or attempt >= self.max_retries:
            if problem is not None:
                raise ModelError(f"{self.provider} call failed after {attempt + 1} attempts: "
                                 f"{problem} (check base_url, or raise timeout= or max_retries=)")
            raise_for(self.provider, status, body, key_env=self.key_env)
        await self.sleep(self.backoff.delay(attempt, self.random, parse_retry_after(headers)))

    async def post(self, path: str, body: Mapping[str, Any]) -> Any:
        """The JSON reply of a successful POST."""
        own = self.client is None
        client = self.client or self._client()
        try:
            for attempt in range(self.max_retries + 1):
                try:
                    resp = await client.post(self.base_url + path, json=body,
                                             headers=self.headers, timeout=self.timeout)
                except _TRANSIENT as exc:
                    await self._retry_or_raise(attempt, None, None, {}, _describe(exc))
                    continue
                if resp.status_code < 400:
                    return read_json(resp.text, self.provider)
                await self._retry_or_raise(attempt, resp.status_code, _body(resp.text),
                                           resp.headers)
            raise AssertionError("unreachable: the last attempt raises")  # pragma: no cover
        finally:
            if own:
                await client.aclose()

    async def events(self, path: str, body: Mapping[str, Any]) -> AsyncIterator[
            tuple[str, str]]:
        """``(event, data)`` of a server-sent-event stream. Failures before the first event are
        retried like :meth:`post`; after it, a retry would repeat text already yielded, so
        they raise."""
        own = self.client is None
        client = self.client or self._client()
        started = False
        try:
            for attempt in range(self.max_retries + 1):
                try:
                    async with client.stream("POST", self.base_url + path, json=body,
                                             headers=self.headers, timeout=self.timeout) as resp:
                        if resp.status_code >= 400:
                            text = (await resp.aread()).decode("utf-8", "replace")
                            await self._retry_or_raise(attempt, resp.status_code, _body(text),
                                                       resp.headers)
                            continue
                        decoder = Decoder()
                        async for chunk in resp.aiter_bytes():
                            for event in decoder.feed(chunk):
                                if event.data is not None:
                                    started = True
                                    yield event.event, event.data
                        last = decoder.close()
                        if last is not None and last.data is not None:
                            yield last.event, last.data
                        return
                except _TRANSIENT as exc:
                    if started:
                        raise ModelError(f"{self.provider} stream broke: {_describe(exc)}"
                                         ) from exc
                    await self._retry_or_raise(attempt, None, None, {}, _describe(exc))
        finally:
            if own:
                await client.aclose()


@functools.lru_cache(maxsize=1)
def _ssl_context() -> ssl.SSLContext:
    """Built once: making one costs ~40 ms, and each call opens a fresh ``AsyncClient``."""
    return httpx.create_ssl_context()


def _describe(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _body(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text[:2000]


__all__ = ["DEFAULT_BACKOFF", "Backoff", "Sleep", "Transport", "context_length",
           "parse_retry_after", "preview", "raise_for", "raise_sdk_error", "read_json"]
