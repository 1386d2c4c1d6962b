"""The proxy's upstream client (:mod:`loomctx.service.upstream`) against a scripted HTTP/1.1
server on loopback: connections kept alive and reused, a closed one never reused, bodies whole
or as they come, and every failure as httpx's exception class."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import httpx
import pytest

from loomctx.service.upstream import UpstreamClient, needs_httpx

Answer = Callable[[bytes], list[bytes]]
"""What the server writes for one request (given its raw bytes); b"" in the list: close."""

H = {b"content-type": b"application/json"}


def _ok(body: bytes = b'{"ok":true}', *, close: bool = False) -> Answer:
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
    return lambda _: [head % len(body) + body, *([b""] if close else [])]


@asynccontextmanager
async def _server(answer: Answer) -> AsyncIterator[tuple[str, list[int]]]:
    """``(url, connections)``: a server answering every request with ``answer``;
    ``connections`` counts the connections it accepted."""
    connections = [0]

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections[0] += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                raw = head + await reader.readexactly(length)
                for part in answer(raw):
                    if part == b"":
                        writer.close()
                        return
                    if part == b"hang":
                        await asyncio.sleep(30)
                    writer.write(part)
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1/chat/completions", connections
    finally:
        server.close()


async def _post(client: UpstreamClient, url: str, content: bytes = b"{}") -> bytes:
    resp = await client.send(url, H, content)
    try:
        return await resp.aread()
    finally:
        await resp.aclose()


def test_a_kept_alive_connection_serves_the_next_requests() -> None:
    async def go() -> None:
        async with _server(_ok()) as (url, connections), UpstreamClient(timeout=5) as client:
            for _ in range(3):
                assert await _post(client, url) == b'{"ok":true}'
            assert connections == [1]

    asyncio.run(go())


def test_a_connection_the_upstream_closed_is_not_reused() -> None:
    async def go() -> None:
        async with _server(_ok(close=True)) as (url, connections), \
                UpstreamClient(timeout=5) as client:
            for _ in range(3):
                assert await _post(client, url) == b'{"ok":true}'
                await asyncio.sleep(0.05)  # the close reaches the loop
            assert connections == [3]

    asyncio.run(go())


def test_the_request_goes_with_its_host_headers_and_body() -> None:
    seen: list[bytes] = []

    def answer(raw: bytes) -> list[bytes]:
        seen.append(raw)
        return _ok()(raw)

    async def go() -> None:
        async with _server(answer) as (url, _), UpstreamClient(timeout=5) as client:
            await _post(client, url + "?api-version=x", b'{"a":1}')
        head, _, body = seen[0].partition(b"\r\n\r\n")
        assert head.startswith(b"POST /v1/chat/completions?api-version=x HTTP/1.1\r\n")
        assert b"\r\nhost: 127.0.0.1:" in head.lower()
        assert b"\r\ncontent-type: application/json" in head
        assert body == b'{"a":1}'

    asyncio.run(go())


def test_a_chunked_body_comes_as_it_is_sent_and_status_and_headers_are_read() -> None:
    parts = [b"HTTP/1.1 400 Bad Request\r\ntransfer-encoding: chunked\r\nx-a: b\r\n\r\n",
             b"5\r\nhello\r\n", b"6\r\n world\r\n", b"0\r\n\r\n"]

    async def go() -> None:
        async with _server(lambda _: parts) as (url, connections), \
                UpstreamClient(timeout=5) as client:
            resp = await client.send(url, H, b"{}")
            assert resp.status_code == 400 and resp.headers["x-a"] == "b"
            assert b"".join([c async for c in resp.aiter_bytes()]) == b"hello world"
            await resp.aclose()
            assert await _post(client, url) == b"hello world"
            assert connections == [1]

    asyncio.run(go())


def test_a_body_read_twice_is_the_same() -> None:
    async def go() -> None:
        async with _server(_ok(b"[1]")) as (url, _), UpstreamClient(timeout=5) as client:
            resp = await client.send(url, H, b"{}")
            assert await resp.aread() == b"[1]"
            await resp.aclose()
            assert await resp.aread() == b"[1]"

    asyncio.run(go())


def test_a_silent_upstream_is_a_read_timeout() -> None:
    async def go() -> None:
        async with _server(lambda _: [b"hang"]) as (url, _), \
                UpstreamClient(timeout=0.2) as client:
            with pytest.raises(httpx.ReadTimeout):
                await client.send(url, H, b"{}")

    asyncio.run(go())


def test_a_body_cut_short_is_a_remote_protocol_error_and_the_connection_is_dropped() -> None:
    cut = b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n" + b"x" * 10

    async def go() -> None:
        async with _server(lambda _: [cut, b""]) as (url, _), \
                UpstreamClient(timeout=5) as client:
            resp = await client.send(url, H, b"{}")
            with pytest.raises(httpx.RemoteProtocolError):
                await resp.aread()
            await resp.aclose()
            assert not any(client._idle.values())

    asyncio.run(go())


def test_no_answer_at_all_is_a_remote_protocol_error() -> None:
    async def go() -> None:
        async with _server(lambda _: [b""]) as (url, _), UpstreamClient(timeout=5) as client:
            with pytest.raises(httpx.RemoteProtocolError):
                await client.send(url, H, b"{}")

    asyncio.run(go())


def test_nobody_listening_is_a_connect_error() -> None:
    async def go() -> None:
        async with _server(_ok()) as (url, _):
            pass  # closed: nothing listens on that port any more
        async with UpstreamClient(timeout=5) as client:
            with pytest.raises(httpx.ConnectError):
                await client.send(url, H, b"{}")

    asyncio.run(go())


def test_an_upstream_behind_an_http_proxy_goes_through_httpx(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    assert not needs_httpx("https://api.example.com/v1")
    assert needs_httpx("unix:///tmp/socket")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.local:3128")
    assert needs_httpx("https://api.example.com/v1")
    assert not needs_httpx("http://api.example.com/v1")
    monkeypatch.setenv("NO_PROXY", "api.example.com")
    assert not needs_httpx("https://api.example.com/v1")
