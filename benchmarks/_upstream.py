"""A lean stand-in for a model API, for ``bench_proxy.py --only workers``, run as its own process.

Why: a real upstream runs on other machines, but on this two-core machine whatever stands in
for it spends the same cores as the workers it feeds. The test fake
(:class:`loomctx.testing.windowed.WindowedFakeServer`: ``http.server`` threads, the prompt
parsed and counted) spent 0.7–0.8 ms of CPU per proxied request, a tenth of what one worker
spends, and that tenth is taken from the second worker's core. This server answers every
``POST .../chat/completions`` on a keep-alive HTTP/1.1 connection with one fixed, non-streamed
OpenAI reply, reading the body without parsing it; ``GET`` answers ``ok`` (the health check).

    python3 benchmarks/_upstream.py --port PORT [--text TEXT]
"""

from __future__ import annotations

import argparse
import asyncio
import json

_MAX_HEAD = 64 * 1024


def reply(text: str) -> bytes:
    """The whole HTTP response every POST gets."""
    body = json.dumps({
        "id": "chatcmpl-lean", "object": "chat.completion", "created": 0, "model": "gpt-4o",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}]}).encode()
    return (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
            + str(len(body)).encode() + b"\r\n\r\n" + body)


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 answer: bytes) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            if len(head) > _MAX_HEAD:
                break
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            await reader.readexactly(length)
            if head.startswith(b"POST ") and b"/chat/completions" in head.split(b" ", 2)[1]:
                writer.write(answer)
            elif head.startswith(b"GET "):
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
            else:
                writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError,
            ValueError):
        pass  # the client closed, or sent what this stand-in does not read
    finally:
        writer.close()


async def _main(port: int, text: str) -> None:
    answer = reply(text)
    server = await asyncio.start_server(lambda r, w: _serve(r, w, answer), "127.0.0.1", port,
                                        backlog=256, limit=_MAX_HEAD)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--text", default="ok", help="the assistant's reply to every request")
    args = p.parse_args(argv)
    asyncio.run(_main(args.port, args.text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
