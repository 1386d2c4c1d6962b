"""The connection guard: uvicorn's httptools protocol with the bounds of
:class:`~loomctx.service.limits.EdgeLimits` enforced before its parser sees a byte.

Why a guard in front of the parser: httptools has no limit on a request's head, and uvicorn
accumulates a header value piece by piece, so one 256 MB header took a minute of the event
loop (``/health`` waited up to 17 s for everyone) and four unfinished 100 MB heads took
440 MB; a socket that drips a header byte now and then was kept forever. uvicorn's h11
protocol bounds a head's size, but not its lines, its time nor the connections of a client,
and costs more CPU per request (docs/service.md has the measurements). Here each read is
looked at before it is parsed:

- while a head is incomplete, its bytes and line breaks are counted (the end of the head is
  found with ``bytes.find``, in C); past ``max_header_bytes`` or ``max_headers`` the client
  gets 431 and the connection is closed; the read that crosses the limit is never parsed;
- a head must arrive whole within ``header_timeout`` of its first byte (or of the connection's
  opening); then the connection is closed (408 if part of a head came);
- a kept-alive connection idle longer than ``idle_timeout`` is closed (uvicorn's own timer);
- a connection past ``max_client_connections`` of its address (an IPv6 /64), or past
  ``max_connections`` in all, is closed at once, before uvicorn sees it.

Counting is per server: :func:`guarded` makes a protocol class (with its own counts) per
server; ``serve --workers N`` names :class:`WorkerProtocol`, configured by each worker process
(one server each) with :func:`configure_worker`.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
from asyncio import TimerHandle
from collections import Counter
from typing import Any, ClassVar

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from loomctx.service.limits import EdgeLimits

WORKER_PROTOCOL = "loomctx.service.guard:WorkerProtocol"
"""What ``serve --workers N`` passes to uvicorn as its HTTP protocol."""


class _Counts:
    """The open connections of one server, per client address and in all."""

    def __init__(self) -> None:
        self.per_client: Counter[str] = Counter()
        self.total = 0


def _address(peer: Any) -> str:
    """The address a connection is counted under (an IPv6 client's /64)."""
    host = peer[0] if isinstance(peer, tuple) and peer else str(peer or "")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return str(host)
    if address.version == 6:
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


def _head_end(buf: bytes) -> int:
    """The index just past the blank line that ends a request head in ``buf``, or -1."""
    crlf, lf = buf.find(b"\r\n\r\n"), buf.find(b"\n\n")
    return min([i + 4 for i in (crlf,) if i >= 0] + [i + 2 for i in (lf,) if i >= 0],
               default=-1)


def _refusal(status: int, reason: str, message: str) -> bytes:
    body = json.dumps({"error": {"message": message, "type": "invalid_request_error",
                                 "code": None}}).encode()
    return (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n").encode() + body


class GuardedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol behind the bounds of :attr:`limits` (see the module)."""

    limits: ClassVar[EdgeLimits] = EdgeLimits()
    counts: ClassVar[_Counts] = _Counts()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._client: str | None = None  # counted under this address; None: refused
        self._in_body = False
        self._head = 0
        self._lines = 0
        self._tail = b""
        self._timer: TimerHandle | None = None

    # -- connections --------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        client = _address(transport.get_extra_info("peername"))
        counts, limits = self.counts, self.limits
        if counts.total >= limits.max_connections \
                or counts.per_client[client] >= limits.max_client_connections:
            transport.close()
            return
        counts.per_client[client] += 1
        counts.total += 1
        self._client = client
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._client is None:
            return
        counts = self.counts
        counts.per_client[self._client] -= 1
        if counts.per_client[self._client] <= 0:
            del counts.per_client[self._client]
        counts.total -= 1
        self._client = None
        self._disarm()
        super().connection_lost(exc)

    # -- request heads ------------------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        if self._client is None or self.transport.is_closing():
            return
        if not self._in_body:
            if self._timer is None:
                self._arm()
            joined = self._tail + data
            end = _head_end(joined)
            head = data if end < 0 else data[:end - len(self._tail)]
            self._head += len(head)
            self._lines += head.count(b"\n")
            self._tail = joined[-3:] if end < 0 else b""
            limits = self.limits
            if self._head > limits.max_header_bytes:
                self._refuse(431, "Request Header Fields Too Large",
                             f"the request head is over {limits.max_header_bytes} bytes "
                             "(serve --max-header-kb)")
                return
            if self._lines > limits.max_headers + 2:  # the request line and the blank line
                self._refuse(431, "Request Header Fields Too Large",
                             f"the request has over {limits.max_headers} header lines "
                             "(serve --max-headers)")
                return
        super().data_received(data)

    def on_headers_complete(self) -> None:
        self._in_body = True
        self._head = self._lines = 0
        self._tail = b""
        self._disarm()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._in_body = False
        super().on_message_complete()

    # -- the head's deadline ------------------------------------------------------------------
    def _arm(self) -> None:
        self._disarm()
        self._timer = self.loop.call_later(self.limits.header_timeout, self._timed_out)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _timed_out(self) -> None:
        self._timer = None
        if self._client is None or self.transport.is_closing() or self._in_body:
            return
        if self.cycle is not None and not self.cycle.response_complete:
            self._arm()  # a response is still being written: its next head can wait
            return
        if self._head:
            self._refuse(408, "Request Timeout", f"the request head did not arrive within "
                                                 f"{self.limits.header_timeout} s "
                                                 "(serve --header-timeout)")
        else:
            self.transport.close()

    def _refuse(self, status: int, reason: str, message: str) -> None:
        self.logger.warning("closed a connection from %s: %s", self._client, message)
        self.transport.write(_refusal(status, reason, message))
        self.transport.close()


def guarded(limits: EdgeLimits) -> type[GuardedProtocol]:
    """A protocol class for one server: ``limits``, and connection counts of its own."""
    return type("GuardedProtocol", (GuardedProtocol,), {"limits": limits, "counts": _Counts()})


class WorkerProtocol(GuardedProtocol):
    """The protocol of a ``serve --workers N`` process, which serves one server."""

    counts: ClassVar[_Counts] = _Counts()


def configure_worker(limits: EdgeLimits) -> None:
    """Set the bounds of this worker process's server (before it accepts connections)."""
    WorkerProtocol.limits = limits


__all__ = ["WORKER_PROTOCOL", "GuardedProtocol", "WorkerProtocol", "configure_worker",
           "guarded"]
