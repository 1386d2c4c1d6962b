"""A lean HTTP/1.1 load generator for ``bench_proxy.py --only throughput``, run as its own process.

Why: on a two-core machine the load generator competes with the server it measures. Sixteen
``httpx`` client threads spent 2.8–4.4 ms of CPU per request, in one process whose interpreter
lock they also shared with the fake upstream, so they, not the proxy, set how many requests a
second could be asked. These clients are one asyncio loop over raw keep-alive connections
(well under a millisecond of CPU per request); every number they produce is measured the same
way for the proxy, the bare relay and the fake alone.

    python3 benchmarks/_load.py URL --clients 16 --requests 25 [--session-header]
        [--session-prefix P] [--key KEY] [--text PREFIX] [--accept-429]

Prints one JSON object: wall seconds, each request's latency, and this process's CPU seconds.
Each client keeps one connection, sends its requests back to back and reads each answer whole
(``Content-Length`` or chunked); any status other than 200 stops the run with an error (with
``--accept-429``, a 429 is counted in ``refused`` and its latency left out).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from urllib.parse import urlsplit


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if headers.get("transfer-encoding", "").lower() == "chunked":
        parts = []
        while True:
            size = int((await reader.readline()).split(b";")[0].strip(), 16)
            if size == 0:
                while (await reader.readline()) not in (b"\r\n", b""):
                    pass  # trailers
                return b"".join(parts)
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
    return await reader.readexactly(int(headers.get("content-length", "0")))


async def _client(n: int, host: str, port: int, path: str, requests: int, header: bool,
                  latencies: list[float], opts: argparse.Namespace, refused: list[int]) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        for k in range(requests):
            body = json.dumps({"model": "gpt-4o", "max_tokens": 100, "messages": [
                {"role": "user", "content": f"{opts.text}client {n} question {k}"}]}).encode()
            extra = f"x-loomctx-session: {opts.session_prefix}c{n}\r\n" if header else ""
            if opts.key:
                extra += f"authorization: Bearer {opts.key}\r\n"
            head = (f"POST {path} HTTP/1.1\r\nhost: {host}:{port}\r\n"
                    f"content-type: application/json\r\ncontent-length: {len(body)}\r\n"
                    f"{extra}\r\n").encode()
            t = time.perf_counter()
            writer.write(head + body)
            status = await reader.readline()
            headers = {}
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode("latin-1").partition(":")
                headers[name.strip().lower()] = value.strip()
            payload = await _read_body(reader, headers)
            if opts.accept_429 and status.split()[1:2] == [b"429"]:
                refused.append(1)
                await asyncio.sleep(float(headers.get("retry-after", "1")))
                continue
            latencies.append(time.perf_counter() - t)
            if status.split()[1:2] != [b"200"]:
                raise RuntimeError(f"client {n}: {status.decode().strip()} {payload[:1000]!r}")
    finally:
        writer.close()


async def _run(url: str, clients: int, requests: int, header: bool,
               opts: argparse.Namespace) -> dict[str, object]:
    parts = urlsplit(url)
    path = parts.path.rstrip("/") + "/v1/chat/completions"
    latencies: list[float] = []
    refused: list[int] = []
    t0, c0 = time.perf_counter(), time.process_time()
    await asyncio.gather(*(_client(n, parts.hostname or "127.0.0.1", parts.port or 80, path,
                                   requests, header, latencies, opts, refused)
                           for n in range(clients)))
    return {"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
            "latencies_s": latencies, "refused": len(refused)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("url", help="the server's base URL (its /v1/chat/completions is asked)")
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--requests", type=int, default=25, help="requests per client")
    p.add_argument("--session-header", action="store_true",
                   help="send X-Loomctx-Session: c<N> (each client its own session)")
    p.add_argument("--session-prefix", default="", help="before c<N> in the session header")
    p.add_argument("--key", help="send Authorization: Bearer KEY")
    p.add_argument("--text", default="", help="what every user message starts with")
    p.add_argument("--accept-429", action="store_true",
                   help="count a 429 (waiting its Retry-After) instead of stopping")
    args = p.parse_args(argv)
    if args.clients < 1 or args.requests < 1:
        p.error("--clients and --requests must be at least 1")
    json.dump(asyncio.run(_run(args.url, args.clients, args.requests, args.session_header,
                               args)), sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
