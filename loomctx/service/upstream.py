"""The proxy's upstream client: HTTP/1.1 with kept-alive connections, on asyncio streams and h11.

Every proxied request is one POST to one upstream, and the proxy's throughput is bounded by the
CPU it spends per request. ``httpx`` spent about a third of it in its connection pool's
bookkeeping (each request and each response close walks every pooled connection and asks the
socket whether it is still readable) and in the anyio layer under it. This client keeps the
idle connections of each upstream origin in a stack instead: a request takes the most recently
used one the loop has not seen closed, and gives it back once its response was read whole.

It raises ``httpx``'s exception classes (:class:`httpx.ConnectError`, :class:`httpx.ReadTimeout`,
:class:`httpx.RemoteProtocolError`, ...), so callers handle one family of errors whichever client
sends. Only what the proxy needs is here: ``http`` and ``https`` URLs, request bodies given
whole, responses read whole or as they arrive. An upstream reached through an HTTP proxy
(``HTTPS_PROXY`` and the like in the environment) is sent with ``httpx`` instead: see
:func:`needs_httpx`.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import sys
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Mapping
from typing import TypeVar
from urllib.parse import urlsplit

import h11
import httpx

_CHUNK = 65536
_T = TypeVar("_T")


def needs_httpx(url: str) -> bool:
    """Whether ``url`` is one this client does not send: not ``http``/``https``, or an HTTP
    proxy in the environment applies to it (httpx honours those; this client does not)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return True
    proxies = urllib.request.getproxies()
    if parts.scheme not in proxies and "all" not in proxies:
        return False
    return not urllib.request.proxy_bypass(parts.hostname or "")


class _Connection:
    """One kept-alive connection: its streams and its h11 state."""

    __slots__ = ("h11", "reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.h11 = h11.Connection(h11.CLIENT)

    def usable(self) -> bool:
        """Still open as far as the event loop knows (a server's close is seen as it comes)."""
        return not (self.reader.at_eof() or self.writer.is_closing()
                    or self.reader.exception() is not None)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


class UpstreamResponse:
    """A response whose headers have come; its body is read by :meth:`aread` or
    :meth:`aiter_bytes`, and :meth:`aclose` gives the connection back (or closes it)."""

    def __init__(self, client: UpstreamClient, key: tuple[str, str, int],
                 conn: _Connection, head: h11.Response) -> None:
        self._client, self._key = client, key
        self._conn: _Connection | None = conn
        self.status_code = head.status_code
        self.headers = httpx.Headers([(k.decode("latin-1"), v.decode("latin-1"))
                                      for k, v in head.headers])
        self._done = False
        self._content: bytes | None = None

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The body's bytes as they come (chunked or not, as h11 reads it)."""
        if self._content is not None:
            yield self._content
            return
        conn = self._conn
        if conn is None or self._done:
            return
        while True:
            event = _next(conn)
            if event is h11.NEED_DATA:
                data = await _read(conn, self._client.timeout)
                conn.h11.receive_data(data)
                continue
            if isinstance(event, h11.Data):
                if event.data:
                    yield bytes(event.data)
                continue
            if isinstance(event, h11.EndOfMessage):
                self._done = True
                return
            if isinstance(event, h11.ConnectionClosed):
                raise httpx.RemoteProtocolError("the upstream closed the connection before "
                                                "the response ended")

    async def aread(self) -> bytes:
        """The whole body, kept: read again, even after :meth:`aclose`, it is the same."""
        if self._content is None:
            self._content = b"".join([chunk async for chunk in self.aiter_bytes()])
        return self._content

    async def aclose(self) -> None:
        """Back to the idle stack when the body was read whole and both sides keep the
        connection alive; closed otherwise (a body left unread is not worth draining)."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if self._done and conn.h11.our_state is h11.DONE and conn.h11.their_state is h11.DONE:
            try:
                conn.h11.start_next_cycle()
            except h11.LocalProtocolError:
                conn.close()
                return
            self._client.keep(self._key, conn)
        else:
            conn.close()


class UpstreamClient:
    """Sends requests to upstreams over kept-alive HTTP/1.1 connections.

    ``timeout`` bounds each wait for the upstream (a connect, a write, each read), as
    ``httpx.Timeout`` does; ``connect`` the connect alone. At most ``max_idle`` idle
    connections are kept per origin.
    """

    def __init__(self, *, timeout: float, connect: float | None = None,
                 max_idle: int = 64, ssl_context: ssl.SSLContext | None = None) -> None:
        self.timeout = timeout
        self.connect_timeout = timeout if connect is None else connect
        self.max_idle = max_idle
        self._ssl = ssl_context
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._closed = False

    async def __aenter__(self) -> UpstreamClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        self._closed = True
        for stack in self._idle.values():
            for conn in stack:
                conn.close()
        self._idle.clear()

    def _context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = httpx.create_ssl_context()
        return self._ssl

    async def send(self, url: str, headers: Mapping[bytes, bytes], content: bytes,
                   ) -> UpstreamResponse:
        """POST ``content`` to ``url``; returns once the response's headers have come.

        Never sent twice: a kept-alive connection the upstream closed while the request went
        fails the request (a 502 to the proxy's client, whose SDK retries) rather than risk
        a second, billed call."""
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        key = (parts.scheme, host, port)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        authority = parts.netloc.rpartition("@")[2]
        sent = [(b"host", authority.encode("ascii")),
                *((k, v) for k, v in headers.items() if k.lower() != b"host"),
                (b"content-length", str(len(content)).encode())]
        request = h11.Request(method="POST", target=target.encode("ascii"), headers=sent)
        conn = self._take(key)
        try:
            if conn is None:
                conn = await self._open(key)
            head = await self._exchange(conn, request, content)
        except BaseException:
            if conn is not None:
                conn.close()
            raise
        return UpstreamResponse(self, key, conn, head)

    def _take(self, key: tuple[str, str, int]) -> _Connection | None:
        """The most recently used idle connection to ``key`` still open, if any."""
        stack = self._idle.get(key)
        while stack:
            conn = stack.pop()
            if conn.usable():
                return conn
            conn.close()
        return None

    async def _exchange(self, conn: _Connection, request: h11.Request, content: bytes,
                        ) -> h11.Response:
        data = conn.h11.send(request) + conn.h11.send(h11.Data(data=content)) + \
            conn.h11.send(h11.EndOfMessage())  # type: ignore[operator]
        try:
            conn.writer.write(data)
            await _within(conn.writer.drain(), self.timeout)
        except TimeoutError as exc:
            raise httpx.WriteTimeout("the upstream did not take the request in time") from exc
        except OSError as exc:
            raise httpx.WriteError(f"{type(exc).__name__}: {exc}") from exc
        while True:
            event = _next(conn)
            if event is h11.NEED_DATA:
                conn.h11.receive_data(await _read(conn, self.timeout))
                continue
            if isinstance(event, h11.Response):
                return event
            if isinstance(event, h11.InformationalResponse):
                continue
            raise httpx.RemoteProtocolError("the upstream closed the connection without "
                                            "answering")

    async def _open(self, key: tuple[str, str, int]) -> _Connection:
        scheme, host, port = key
        try:
            reader, writer = await _within(asyncio.open_connection(
                host, port, ssl=self._context() if scheme == "https" else None,
                limit=_CHUNK * 4), self.connect_timeout)
        except TimeoutError as exc:
            raise httpx.ConnectTimeout(f"no connection to {host}:{port} within "
                                       f"{self.connect_timeout:g} s") from exc
        except (OSError, ssl.SSLError) as exc:
            raise httpx.ConnectError(f"{type(exc).__name__}: {exc}") from exc
        return _Connection(reader, writer)

    def keep(self, key: tuple[str, str, int], conn: _Connection) -> None:
        """Take back a connection whose exchange ended cleanly, as idle (or close it)."""
        stack = self._idle.setdefault(key, [])
        if self._closed or len(stack) >= self.max_idle or not conn.usable():
            conn.close()
        else:
            stack.append(conn)


async def _read(conn: _Connection, timeout: float) -> bytes:
    """The next bytes the upstream sends (b"" at its end of the stream)."""
    try:
        return await _within(conn.reader.read(_CHUNK), timeout)
    except TimeoutError as exc:
        raise httpx.ReadTimeout("the upstream sent nothing within the timeout") from exc
    except OSError as exc:
        raise httpx.ReadError(f"{type(exc).__name__}: {exc}") from exc


def _next(conn: _Connection) -> object:
    """h11's next event, its protocol errors as httpx's."""
    try:
        return conn.h11.next_event()
    except h11.ProtocolError as exc:
        raise httpx.RemoteProtocolError(f"the upstream broke HTTP/1.1: {exc}") from exc


async def _within(step: Awaitable[_T], seconds: float) -> _T:
    """``step``, or :class:`TimeoutError` after ``seconds`` (``asyncio.timeout`` where there
    is one: no task per read)."""
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(seconds):
            return await step
    try:
        return await asyncio.wait_for(step, seconds)
    except asyncio.TimeoutError as exc:  # not yet the builtin one before 3.11
        raise TimeoutError(str(exc)) from exc


__all__ = ["UpstreamClient", "UpstreamResponse", "needs_httpx"]
