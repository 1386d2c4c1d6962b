"""The HTTP transport both model clients share: retries, backoff, errors, SSE.

A provider call fails in a few ways that need different answers: a 429 or a 5xx or a timeout
passes if we wait (retried with exponential backoff and full jitter, honouring ``Retry-After``);
a context-length 400 never passes by itself (raised at once as :class:`ContextLengthError` with
the numbers the provider gave, so the caller can rebuild smaller); anything else is the caller's
to fix (raised at once with the provider's own message). Both clients read errors the same way so
an agent handles OpenAI, Anthropic and local servers alike.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import json
import random as _random
import re
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

import httpx

from loomctx.errors import (
    ConfigError,
    ContextLengthError,
    ModelError,
    ModelResponseError,
    RateLimitError,
)

Sleep = Callable[[float], Awaitable[None]]
"""How the client waits between attempts (``asyncio.sleep``; a test injects a recorder)."""

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 529})
"""Statuses worth another attempt (529: Anthropic's "overloaded")."""

_TRANSIENT = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


@dataclass(frozen=True, kw_only=True)
class Backoff:
    """How long to wait before each retry: ``min(max, base * 2**attempt)``, jittered."""

    base: float = 0.5
    """Seconds of the first wait's ceiling; each later attempt doubles it."""
    max: float = 30.0
    """Ceiling of one wait, a server's ``Retry-After`` included."""
    jitter: bool = True
    """Full jitter (a uniform wait in ``[0, ceiling]``) so many clients do not retry in step."""

    def __post_init__(self) -> None:
        if self.base < 0 or self.max < 0:
            raise ConfigError(f"Backoff needs base >= 0 and max >= 0, got base={self.base!r}, "
                              f"max={self.max!r}")

    def delay(self, attempt: int, rnd: Callable[[], float],
              retry_after: float | None = None) -> float:
        """Seconds before retry number ``attempt`` (0 for the first retry)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max)
        ceiling = min(self.max, self.base * 2 ** attempt)
        return rnd() * ceiling if self.jitter else ceiling


DEFAULT_BACKOFF = Backoff()
"""0.5 s doubling up to 30 s, fully jittered."""


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


_OPENAI_LIMIT = re.compile(r"maximum context length is (\d+)")
_OPENAI_ASKED = re.compile(r"(?:resulted in|requested) (\d+) tokens")
_ANTHROPIC_TOO_LONG = re.compile(r"prompt is too long: (\d+) tokens > (\d+)")
_ANTHROPIC_SUM = re.compile(r"exceed context limit: (\d+) \+ (\d+) > (\d+)")


def preview(value: Any, limit: int = 200) -> str:
    """``str(value)`` cut to ``limit`` characters, for an error message about a reply (a reply
    nested too deep to print shows as such instead of raising)."""
    try:
        text = value if isinstance(value, str) else str(value)
    except (RecursionError, ValueError):
        return "<nested too deep to show>"
    return text[:limit]


def _error_fields(body: Any) -> tuple[str, str]:
    """(message, code-or-type) from either provider's error body, or from plain text."""
    if isinstance(body, Mapping):
        err = body.get("error", body)
        if isinstance(err, Mapping):
            message = err.get("message")
            code = err.get("code") or err.get("type") or ""
            return (message if isinstance(message, str) and message else preview(dict(err), 300),
                    code if isinstance(code, str) else preview(code, 40))
        if isinstance(err, str):
            return err, ""
        return preview(dict(body), 300), ""
    return preview(body or "", 2000), ""


def context_length(body: Any) -> tuple[int | None, int | None] | None:
    """(limit, requested) when ``body`` is a provider's "input too long" error, else None."""
    message, code = _error_fields(body)
    err = body.get("error") if isinstance(body, Mapping) else None
    if isinstance(err, Mapping) and "n_ctx" in err:  # llama.cpp server
        return _int(err.get("n_ctx")), _int(err.get("n_prompt_tokens"))
    if m := _ANTHROPIC_TOO_LONG.search(message):
        return int(m.group(2)), int(m.group(1))
    if m := _ANTHROPIC_SUM.search(message):
        return int(m.group(3)), int(m.group(1)) + int(m.group(2))
    limit = _OPENAI_LIMIT.search(message)
    if limit or code in ("context_length_exceeded", "exceed_context_size_error"):
        asked = _OPENAI_ASKED.search(message)
        return (int(limit.group(1)) if limit else None), (int(asked.group(1)) if asked else None)
    return None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) else None


def one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def raise_for(provider: str, status: int | None, body: Any, *, key_env: str) -> NoReturn:
    """Raise the error for a failed call (after retries, or at once when not retryable)."""
    message, _ = _error_fields(body)
    where = f"{provider} returned HTTP {status}" if status else f"{provider} stream failed"
    if (numbers := context_length(body)) is not None:
        limit, requested = numbers
        raise ContextLengthError(
            f"{where}: {one_line(message)} (build with a smaller budget and retry)",
            status=status, limit=limit, requested=requested)
    if status == 429:
        raise RateLimitError(f"{where} (rate limited) after the client's retries: "
                              f"{one_line(message)}", status=status)
    hint = {401: f"; check the API key (api_key= or ${key_env})",
            403: "; the key lacks access to this model or endpoint",
            404: "; check base_url and the model name"}.get(status or 0, "")
    raise ModelError(f"{where}: {one_line(message)}{hint}", status=status)


def raise_sdk_error(exc: Exception, provider: str, key_env: str) -> None:
    """Raise loomctx's error for an official SDK's exception that carries an HTTP status;
    return for any other exception (the caller re-raises it unchanged)."""
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        return
    body = getattr(exc, "body", None)
    if not isinstance(body, Mapping):
        body = {"error": {"message": str(exc)}}
    elif "error" not in body and "message" in body:
        body = {"error": body}
    raise_for(provider, status, body, key_env=key_env)


def read_json(text: str, provider: str) -> Any:
    """A reply body as JSON, or :class:`ModelResponseError` showing what came instead."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ModelResponseError(
            f"{provider} sent a reply that is not JSON ({exc.msg}): {one_line(text, 120)!r}"
        ) from exc
    except RecursionError as exc:
        raise ModelResponseError(f"{provider} sent a reply nested too deep to read: "
                                 f"{one_line(text, 120)!r}") from exc


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
                        async for event in _sse(resp):
                            started = True
                            yield event
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


async def _sse(resp: httpx.Response) -> AsyncIterator[tuple[str, str]]:
    """Server-sent events: ``event:`` names it (default ``message``), ``data:`` lines join."""
    event, data = "message", list[str]()
    async for line in resp.aiter_lines():
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = "message", list[str]()
        elif line.startswith(":"):
            continue
        else:
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)
    if data:
        yield event, "\n".join(data)


__all__ = ["DEFAULT_BACKOFF", "Backoff", "Sleep", "Transport", "context_length",
           "parse_retry_after", "preview", "raise_for", "raise_sdk_error", "read_json"]
