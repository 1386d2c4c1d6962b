"""Bounds at the edge, before a request's key is read: a head too large or with too many lines
gets 431 and its connection closed, a head that drips is closed at its deadline, and a client
address (or all clients) cannot hold more connections than allowed — while ``/health`` answers
everyone else. Timings are measured in ``benchmarks/bench_edge.py``, never asserted here."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from loomctx.service import RunningServer
from loomctx.testing.windowed import WindowedFakeServer


def _connect(server: RunningServer, source: str = "127.0.0.1") -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=30,
                                    source_address=(source, 0))


def _until_closed(sock: socket.socket, wait: float = 30.0) -> bytes | None:
    """What the server sends until it closes the connection (b"" for a bare close; a reset
    counts as a close); None if it is still open after ``wait`` seconds."""
    sock.settimeout(wait)
    got = b""
    try:
        while chunk := sock.recv(65536):
            got += chunk
    except ConnectionResetError:
        pass
    except TimeoutError:
        return None
    return got


def _answer(sock: socket.socket, wait: float = 30.0) -> bytes:
    got = _until_closed(sock, wait)
    assert got is not None, f"the connection was still open after {wait} s"
    return got


def _drips_until_closed(sock: socket.socket, seconds: float) -> bool:
    """Send one header byte every 0.1 s until the server answers or closes (True), or for
    ``seconds`` (False)."""
    sock.settimeout(0.1)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            sock.sendall(b"X")
            sock.recv(65536)  # a 408, or b"" for a close: the server ended it either way
            return True
        except TimeoutError:
            continue
        except OSError:
            return True
    return False


def _health(server: RunningServer, source: str = "127.0.0.1") -> int:
    transport = httpx.HTTPTransport(local_address=source)
    with httpx.Client(transport=transport, timeout=30) as client:
        return client.get(server.url + "/health").status_code


@pytest.fixture
def edge_server(upstream: WindowedFakeServer, start: Callable[..., RunningServer]
                ) -> Iterator[Callable[..., RunningServer]]:
    """``edge_server(**limits)``: the service with those edge limits (none: the defaults)."""
    def go(**limits: object) -> RunningServer:
        if not limits:
            return start(upstream)
        from loomctx.service.limits import EdgeLimits

        return start(upstream, edge=EdgeLimits(**limits))  # type: ignore[arg-type]

    yield go


def test_a_64_mb_header_is_refused_while_health_answers(
        edge_server: Callable[..., RunningServer]) -> None:
    """One 256 MB header took a minute of the event loop and /health waited up to 17 s."""
    server = edge_server()
    outcome: dict[str, bytes | None] = {}

    def attack() -> None:
        with _connect(server) as sock:
            with contextlib.suppress(OSError):  # the server closes while we still send
                sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ")
                block = b"a" * (1 << 20)
                for _ in range(64):
                    sock.sendall(block)
            outcome["answer"] = _until_closed(sock)

    thread = threading.Thread(target=attack)
    thread.start()
    statuses = [_health(server, "127.0.0.2") for _ in range(20)]
    thread.join(timeout=120)
    assert not thread.is_alive() and statuses == [200] * 20
    answer = outcome["answer"]
    assert answer is not None, "the 64 MB head was still being read 30 s after it was sent"
    assert answer == b"" or answer.startswith(b"HTTP/1.1 431"), answer[:200]


def test_too_many_header_lines_get_431(edge_server: Callable[..., RunningServer]) -> None:
    server = edge_server()
    lines = b"".join(b"X-H%d: v\r\n" % n for n in range(101))
    with _connect(server) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n" + lines + b"\r\n")
        head, _, body = _answer(sock).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 431") and b"connection: close" in head
    assert "header lines" in json.loads(body)["error"]["message"]
    with _connect(server) as sock:  # a head of 64 KB is fine, one byte more is not
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nCookie: " + b"c" * 60_000 +
                     b"\r\nConnection: close\r\n\r\n")
        assert _answer(sock).startswith(b"HTTP/1.1 200")


def test_a_dripping_head_and_a_silent_connection_are_closed_at_the_header_timeout(
        edge_server: Callable[..., RunningServer]) -> None:
    """200 sockets dripping header bytes stayed open 70 s: no header timeout."""
    server = edge_server(header_timeout=0.5)
    with _connect(server) as dripping, _connect(server) as silent:
        dripping.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        closed = _drips_until_closed(dripping, seconds=10.0)
        assert closed, "a head dripping for 10 s was not closed"
        assert _answer(silent) == b""  # never sent a byte: closed without a word
    assert _health(server) == 200


def test_one_address_cannot_hold_more_connections_than_its_share(
        edge_server: Callable[..., RunningServer]) -> None:
    server = edge_server()  # the default: 64 per address
    held = [_connect(server) for _ in range(64)]
    try:
        with _connect(server) as extra:
            assert _answer(extra) == b""  # closed at once
        assert _health(server, "127.0.0.2") == 200  # another address is served
    finally:
        for sock in held:
            sock.close()
    assert _health(server) == 200  # and this one again once it let go


def test_all_clients_together_cannot_hold_more_connections_than_the_process_allows(
        edge_server: Callable[..., RunningServer]) -> None:
    server = edge_server(max_connections=4)
    held = [_connect(server, f"127.0.0.{n}") for n in range(2, 6)]
    try:
        with _connect(server, "127.0.0.9") as extra:
            assert _answer(extra) == b""
    finally:
        for sock in held:
            sock.close()
    assert _health(server, "127.0.0.9") == 200


def test_an_idle_kept_alive_connection_is_closed_at_the_idle_timeout(
        edge_server: Callable[..., RunningServer]) -> None:
    server = edge_server(idle_timeout=0.3)
    with _connect(server) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = _answer(sock)  # the answer, then the close when the connection idles
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b'/v1"}')
