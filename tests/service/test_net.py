"""The asyncio network backend of the proxy's upstream client keeps the anyio backend's
contract: each failure is checked against httpcore's own anyio backend, on asyncio and uvloop,
over real loopback sockets (and TLS with a certificate made here)."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import socket
import ssl
import struct
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpcore
import httpx
import pytest

from loomctx.service._net import AsyncioBackend, UpstreamTransport

Scenario = Callable[[httpcore.AsyncNetworkBackend, int], Awaitable[Any]]
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]

BACKENDS = {"anyio": httpcore.AnyIOBackend, "asyncio": AsyncioBackend}


def _loops() -> list[Any]:
    loops: list[Any] = [pytest.param(asyncio.new_event_loop, id="asyncio-loop")]
    if sys.platform == "win32":  # uvloop has no Windows build; everywhere else the extra has it
        return loops
    import uvloop

    return [*loops, pytest.param(uvloop.new_event_loop, id="uvloop")]


LOOPS = _loops()


def _run(new_loop: Callable[[], asyncio.AbstractEventLoop], handler: Handler,
         scenario: Scenario, backend: httpcore.AsyncNetworkBackend,
         ssl_server: ssl.SSLContext | None = None) -> Any:
    """``scenario(backend, port)`` against a loopback server running ``handler``; the
    outcome is the scenario's value or the class of what it raised."""
    async def main() -> Any:
        server = await asyncio.start_server(handler, "127.0.0.1", 0, ssl=ssl_server)
        port = server.sockets[0].getsockname()[1]
        try:
            return await scenario(backend, port)
        except Exception as exc:
            return type(exc)
        finally:
            server.close()

    loop = new_loop()
    try:
        return loop.run_until_complete(main())
    finally:
        loop.close()


def _both(new_loop: Callable[[], asyncio.AbstractEventLoop], handler: Handler,
          scenario: Scenario, **kw: Any) -> tuple[Any, Any]:
    return tuple(_run(new_loop, handler, scenario, make(), **kw)  # type: ignore[return-value]
                 for make in BACKENDS.values())


async def _silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await asyncio.sleep(5)
    writer.close()


async def _close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.close()


async def _reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def _echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(await reader.readexactly(5))
    await writer.drain()
    await asyncio.sleep(0.2)
    writer.close()


async def _read_once(backend: httpcore.AsyncNetworkBackend, port: int) -> bytes:
    stream = await backend.connect_tcp("127.0.0.1", port, timeout=5)
    try:
        return await stream.read(1024, timeout=0.2)
    finally:
        await stream.aclose()


@pytest.mark.parametrize("new_loop", LOOPS)
def test_the_same_outcomes_as_the_anyio_backend(new_loop: Any) -> None:
    """Timeouts, a clean close, a reset, a read or write after aclose: error for error."""
    async def after_close(backend: httpcore.AsyncNetworkBackend, port: int) -> Any:
        stream = await backend.connect_tcp("127.0.0.1", port, timeout=5)
        await stream.aclose()
        outcome = []
        for step in (stream.read(10, timeout=1), stream.write(b"x", timeout=1)):
            try:
                await step
            except Exception as exc:
                outcome.append(type(exc))
        return outcome

    async def echo(backend: httpcore.AsyncNetworkBackend, port: int) -> bytes:
        stream = await backend.connect_tcp("localhost", port, timeout=5)
        await stream.write(b"hello", timeout=5)
        got = await stream.read(3, timeout=5)
        got += await stream.read(1024, timeout=5)
        await stream.aclose()
        return got

    cases: list[tuple[Handler, Scenario, Any]] = [
        (_silent, _read_once, httpcore.ReadTimeout),
        (_close, _read_once, b""),
        (_reset, _read_once, httpcore.ReadError),
        (_silent, after_close, [httpcore.ReadError, httpcore.WriteError]),
        (_echo, echo, b"hello"),
    ]
    for handler, scenario, expected in cases:
        assert _both(new_loop, handler, scenario) == (expected, expected), scenario


@pytest.mark.parametrize("new_loop", LOOPS)
def test_connect_errors_and_write_timeouts_map_as_anyio(new_loop: Any) -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        closed_port = free.getsockname()[1]

    async def refused(backend: httpcore.AsyncNetworkBackend, port: int) -> Any:
        return await backend.connect_tcp("127.0.0.1", closed_port, timeout=5)

    async def flood(backend: httpcore.AsyncNetworkBackend, port: int) -> Any:
        """The peer never reads: a write that cannot leave in time."""
        stream = await backend.connect_tcp("127.0.0.1", port, timeout=5)
        try:
            for _ in range(1000):
                await stream.write(b"x" * (1 << 20), timeout=0.2)
        finally:
            await stream.aclose()

    assert _both(new_loop, _silent, refused) == (httpcore.ConnectError,) * 2
    assert _both(new_loop, _silent, flood) == (httpcore.WriteTimeout,) * 2


@pytest.mark.parametrize("new_loop", LOOPS)
def test_an_idle_connection_closed_by_the_server_reads_as_readable(new_loop: Any) -> None:
    """The pool drops such a connection instead of sending a request on it."""
    async def idle(backend: httpcore.AsyncNetworkBackend, port: int) -> tuple[bool, bool]:
        stream = await backend.connect_tcp("127.0.0.1", port, timeout=5)
        before = stream.get_extra_info("is_readable")
        await asyncio.sleep(0.3)  # the server closes after 0.2 s
        after = stream.get_extra_info("is_readable")
        await stream.aclose()
        return before, after

    async def close_later(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(0.2)
        writer.close()

    assert _both(new_loop, close_later, idle) == ((False, True),) * 2


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ssl.SSLContext, Path]]:
    """A server context with a self-signed certificate for 127.0.0.1, and that certificate."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "loomctx test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    folder = tmp_path_factory.mktemp("tls")
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert_file, key_file)
    yield server, cert_file


@pytest.mark.parametrize("new_loop", LOOPS)
def test_start_tls_talks_tls_and_refuses_an_untrusted_certificate(
        new_loop: Any, tls: tuple[ssl.SSLContext, Path], caplog: pytest.LogCaptureFixture) -> None:
    """Also: the server's close of a TLS connection reads as its end, and asyncio says
    nothing about it (a plain connection's half-close cannot be asked of TLS)."""
    server_ctx, cert_file = tls

    def over_tls(trust: bool) -> Scenario:
        async def scenario(backend: httpcore.AsyncNetworkBackend, port: int) -> Any:
            client_ctx = ssl.create_default_context()
            if trust:
                client_ctx.load_verify_locations(cert_file)
            plain = await backend.connect_tcp("127.0.0.1", port, timeout=5)
            stream = await plain.start_tls(client_ctx, server_hostname="127.0.0.1", timeout=5)
            assert stream.get_extra_info("ssl_object") is not None
            await stream.write(b"hello", timeout=5)
            got = [b""]
            while got[-1] or len(got) == 1:  # until the server's close reads as b""
                got.append(await stream.read(1024, timeout=5))
            await stream.aclose()
            return b"".join(got)
        return scenario

    assert _both(new_loop, _echo, over_tls(True), ssl_server=server_ctx) == (b"hello",) * 2
    assert _both(new_loop, _echo, over_tls(False), ssl_server=server_ctx) == (
        httpcore.ConnectError,) * 2
    assert [r.getMessage() for r in caplog.records if "eof_received" in r.getMessage()] == []


@pytest.mark.parametrize("new_loop", LOOPS)
def test_the_upstream_transport_carries_https_and_streams(
        new_loop: Any, tls: tuple[ssl.SSLContext, Path]) -> None:
    """Through httpx: a streamed HTTPS answer read in pieces, then a hung one timing out."""
    server_ctx, cert_file = tls

    async def http(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            if b"/hang" in head:
                await asyncio.sleep(5)
                return
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                         b"transfer-encoding: chunked\r\n\r\n")
            for n in range(3):
                event = f"data: {n}\n\n".encode()
                writer.write(b"%x\r\n%s\r\n" % (len(event), event))
                await writer.drain()
                await asyncio.sleep(0.01)
            writer.write(b"0\r\n\r\n")
            await writer.drain()

    async def scenario(backend: httpcore.AsyncNetworkBackend, port: int) -> Any:
        transport = UpstreamTransport(limits=httpx.Limits(max_connections=4),
                                      verify=ssl.create_default_context(cafile=str(cert_file)))
        assert isinstance(transport._pool._network_backend, AsyncioBackend)
        async with httpx.AsyncClient(transport=transport, timeout=0.3) as client:
            base = f"https://127.0.0.1:{port}"
            lines = []
            for _ in range(2):  # the second goes on the kept-alive connection
                async with client.stream("GET", base + "/events") as resp:
                    lines += [line async for line in resp.aiter_lines() if line]
            try:
                await client.get(base + "/hang")
            except httpx.HTTPError as exc:
                return lines, type(exc)
        return lines, None

    lines, failure = _run(new_loop, http, scenario, AsyncioBackend(), ssl_server=server_ctx)
    assert lines == ["data: 0", "data: 1", "data: 2"] * 2
    assert failure is httpx.ReadTimeout
