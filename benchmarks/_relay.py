"""The gateway floor: a pass-through relay on the proxy's own stack, for ``bench_proxy.py``.

The same ASGI server (uvicorn, the same settings as ``loomctx serve``) and the same upstream
client (``httpx.AsyncClient`` with the proxy's pool limits) forward each request's body to the
upstream unchanged and pass the answer back: no parsing, no session, no build. What the
proxy's throughput falls short of this relay's is loomctx's own work; what this relay falls
short of the upstream alone is the machine (one more process, two more HTTP hops).

    python3 benchmarks/_relay.py --upstream http://127.0.0.1:PORT --port PORT
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import uvicorn

_PASS = (b"content-type", b"authorization", b"x-api-key", b"anthropic-version")


def app(upstream: str) -> Any:
    """A raw ASGI app forwarding every POST to ``upstream`` + its path."""
    state: dict[str, httpx.AsyncClient] = {}

    @asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        async with httpx.AsyncClient(timeout=600, limits=httpx.Limits(
                max_connections=256, max_keepalive_connections=64)) as client:
            state["client"] = client
            yield

    async def asgi(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            message = await receive()
            async with lifespan():
                await send({"type": "lifespan.startup.complete"})
                while message["type"] != "lifespan.shutdown":
                    message = await receive()
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["method"] == "GET":  # the health check the benchmark waits on
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"ok"})
            return
        chunks, more = [], True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        headers = [(k, v) for k, v in scope["headers"] if k in _PASS]
        resp = await state["client"].post(upstream + scope["path"], content=b"".join(chunks),
                                          headers=headers)
        out = [(k.encode(), v.encode()) for k, v in resp.headers.items()
               if k.lower() in ("content-type",)]
        await send({"type": "http.response.start", "status": resp.status_code, "headers": out})
        await send({"type": "http.response.body", "body": resp.content})

    return asgi


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--upstream", required=True, help="the upstream's base URL, no path")
    ap.add_argument("--port", type=int, required=True)
    args = ap.parse_args()
    uvicorn.run(app(args.upstream.rstrip("/")), host="127.0.0.1", port=args.port,
                log_level="warning", access_log=False, lifespan="on")
    return 0


if __name__ == "__main__":
    sys.exit(main())
