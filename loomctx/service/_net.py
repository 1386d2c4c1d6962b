"""An httpcore network backend written directly on asyncio, for the proxy's upstream client.

Why: httpcore's default backend goes through anyio, whose every read and write enters a
cancel scope, checkpoints, and pauses/resumes the transport's reading (epoll changes), and
the connection pool asks each idle connection whether its socket is readable (a ``poll``
syscall per idle connection per request). Here a plain ``asyncio.Protocol`` keeps reading,
timeouts are one ``call_later`` timer, and "is the idle connection readable?" is answered
from what the protocol has already seen (data buffered, end of stream, connection lost).

The contract is the anyio backend's, error for error:

- connect: a timeout is ``ConnectTimeout``, any ``OSError`` (refused, unresolvable) is
  ``ConnectError``;
- read: a timeout is ``ReadTimeout``; a reset connection or a read after ``aclose`` is
  ``ReadError``; the peer's clean close reads as ``b""`` (h11 then says the server
  disconnected);
- write: a timeout (the bytes could not be flushed in time) is ``WriteTimeout``; a broken or
  closed connection is ``WriteError``;
- start_tls: a timeout is ``ConnectTimeout``, a handshake or certificate failure
  ``ConnectError``.

Cancellation is asyncio's own: a cancelled task stops waiting at once.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Iterable
from typing import Any, cast

import httpcore
import httpx

_PAUSE_AT = 1 << 18  # bytes buffered before the transport stops reading (a slow consumer)


class _Protocol(asyncio.Protocol):
    """What arrived on one connection, and the one reader or writer waiting for it."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.chunks: list[bytes] = []
        self.size = 0
        self.eof = False
        self.tls = False
        self.exception: Exception | None = None
        self.paused = False
        self.reader: asyncio.Future[bool] | None = None
        self.writable: asyncio.Future[bool] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        self.transport.set_write_buffer_limits(0)  # a write waits until its bytes left, as anyio's

    def data_received(self, data: bytes) -> None:
        self.chunks.append(bytes(data))
        self.size += len(data)
        if self.size >= _PAUSE_AT and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()
        _wake(self.reader)

    def eof_received(self) -> bool | None:
        self.eof = True
        _wake(self.reader)
        # Plain: kept open for writing, as anyio does; aclose closes it. TLS cannot half-close.
        return None if self.tls else True

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        if exc is not None:
            self.exception = exc
        _wake(self.reader)
        _wake(self.writable)

    def pause_writing(self) -> None:
        self.writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        _wake(self.writable)
        self.writable = None


def _wake(waiter: asyncio.Future[bool] | None, result: bool = True) -> None:
    if waiter is not None and not waiter.done():
        waiter.set_result(result)


async def _wait(waiter: asyncio.Future[bool], timeout: float | None) -> bool:
    """True when ``waiter`` was woken, False when ``timeout`` ran out first."""
    if timeout is None:
        return await waiter
    timer = asyncio.get_running_loop().call_later(timeout, _wake, waiter, False)
    try:
        return await waiter
    finally:
        timer.cancel()


class AsyncioStream(httpcore.AsyncNetworkStream):
    """One connection (plain or TLS) as httpcore reads and writes it."""

    def __init__(self, transport: asyncio.Transport, protocol: _Protocol) -> None:
        self._transport = transport
        self._protocol = protocol
        self._closed = False

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        proto = self._protocol
        if not proto.chunks and not proto.eof and not self._closed:
            proto.reader = asyncio.get_running_loop().create_future()
            try:
                if not await _wait(proto.reader, timeout):
                    raise httpcore.ReadTimeout("timed out")
            finally:
                proto.reader = None
        if not proto.chunks:
            if self._closed:
                raise httpcore.ReadError("the connection was closed")
            if proto.exception is not None:
                raise httpcore.ReadError(str(proto.exception)) from proto.exception
            return b""
        chunk = proto.chunks.pop(0)
        if len(chunk) > max_bytes:
            chunk, rest = chunk[:max_bytes], chunk[max_bytes:]
            proto.chunks.insert(0, rest)
        proto.size -= len(chunk)
        if proto.paused and proto.size < _PAUSE_AT // 2:
            proto.paused = False
            self._transport.resume_reading()
        return chunk

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        proto = self._protocol
        if self._closed:
            raise httpcore.WriteError("the connection was closed")
        if proto.exception is not None:
            raise httpcore.WriteError(str(proto.exception)) from proto.exception
        try:
            self._transport.write(buffer)
        except RuntimeError as exc:
            if self._transport.is_closing():
                raise httpcore.WriteError(str(exc)) from exc
            raise
        waiter = proto.writable
        if waiter is not None:
            if not await _wait(waiter, timeout):
                raise httpcore.WriteTimeout("timed out")
            if proto.exception is not None:
                raise httpcore.WriteError(str(proto.exception)) from proto.exception

    async def aclose(self) -> None:
        self._closed = True
        self._transport.close()
        _wake(self._protocol.reader)

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            tls = await asyncio.wait_for(loop.start_tls(
                self._transport, self._protocol, ssl_context, server_hostname=server_hostname),
                timeout)
        except asyncio.TimeoutError as exc:
            await self.aclose()
            raise httpcore.ConnectTimeout("the TLS handshake timed out") from exc
        except (OSError, EOFError) as exc:  # ssl.SSLError is an OSError
            await self.aclose()
            raise httpcore.ConnectError(str(exc)) from exc
        if tls is None:  # pragma: no cover - the loop closed the connection under it
            raise httpcore.ConnectError("the connection closed during the TLS handshake")
        tls = cast(asyncio.Transport, tls)
        self._protocol.transport = tls
        self._protocol.tls = True
        return AsyncioStream(tls, self._protocol)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":  # what anyio's poll() would see: data, end, or a reset
            proto = self._protocol
            return bool(proto.chunks) or proto.eof or self._transport.is_closing()
        if info == "ssl_object":
            return self._transport.get_extra_info("ssl_object")
        if info == "client_addr":
            return self._transport.get_extra_info("sockname")
        if info == "server_addr":
            return self._transport.get_extra_info("peername")
        if info == "socket":
            return self._transport.get_extra_info("socket")
        return None


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """Opens :class:`AsyncioStream` connections on the running asyncio (or uvloop) loop."""

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
                          ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        extra: dict[str, Any] = {}
        if isinstance(loop, asyncio.BaseEventLoop):  # uvloop has no happy eyeballs option
            extra["happy_eyeballs_delay"] = 0.25  # as anyio
        local = None if local_address is None else (local_address, 0)
        return await self._connect(timeout, socket_options, loop.create_connection(
            _Protocol, host, port, local_addr=local, **extra))

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
                                  ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        return await self._connect(timeout, socket_options,
                                   loop.create_unix_connection(_Protocol, path))

    @staticmethod
    async def _connect(timeout: float | None,
                       socket_options: Iterable[httpcore.SOCKET_OPTION] | None,
                       opening: Any) -> AsyncioStream:
        try:
            transport, protocol = await asyncio.wait_for(opening, timeout)
        except asyncio.TimeoutError as exc:  # before OSError: TimeoutError is one
            raise httpcore.ConnectTimeout("timed out") from exc
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        sock: socket.socket | None = transport.get_extra_info("socket")
        for option in socket_options or ():
            if sock is not None:
                sock.setsockopt(*option)
        return AsyncioStream(transport, protocol)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class UpstreamTransport(httpx.AsyncHTTPTransport):
    """httpx's own transport (TLS settings, HTTP/1.1, error mapping) whose connection pool
    runs on :class:`AsyncioBackend`; httpx 0.28 takes no backend argument, so the pool it
    made is replaced by an equal one that does."""

    def __init__(self, *, limits: httpx.Limits,
                 verify: ssl.SSLContext | bool = True) -> None:
        context = httpx.create_ssl_context(verify=verify)
        super().__init__(verify=context, limits=limits)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=context, max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry, http1=True, http2=False,
            network_backend=AsyncioBackend())
