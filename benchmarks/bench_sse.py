"""Server-sent events: loomctx's one reader against httpx-sse, on speed and on odd streams.

Why: every streamed reply (the agent's model calls, the proxy's relay) goes through
:mod:`loomctx.providers.sse`; a well-kept library does the same job, so ours stays only if it
is measurably better. The stream is a deterministic OpenAI-style completion (``--events``
chunks of JSON, ~200 bytes each, with a ``[DONE]`` at the end) cut into ``--chunk``-byte reads,
as a socket delivers it; each reader turns it into (event, data) pairs. The loomctx reader also
keeps each event's bytes (the proxy passes them on unchanged), which httpx-sse does not offer.

httpx-sse is not a dependency: install it to compare (``pip install httpx-sse``); without it
only loomctx's reader and the line reader it replaced (httpx's ``LineDecoder``) are timed.

    python benchmarks/bench_sse.py                       # 20,000 events, 4 KB reads, 7 reps
    python benchmarks/bench_sse.py --events 5000 --chunk 1024 --reps 3
"""

from __future__ import annotations

import argparse
import codecs
import json
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loomctx.providers.sse import Decoder

Reader = Callable[[list[bytes]], list[tuple[str, str]]]


def stream(events: int) -> bytes:
    parts = []
    for i in range(events):
        chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000,
                 "model": "gpt-4o", "choices": [{"index": 0, "delta": {
                     "content": f"word{i} é中 "}, "finish_reason": None}]}
        parts.append(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode())
    parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


def loomctx_reader(chunks: list[bytes]) -> list[tuple[str, str]]:
    decoder, out = Decoder(), []
    for chunk in chunks:
        out.extend((e.event, e.data) for e in decoder.feed(chunk) if e.data is not None)
    last = decoder.close()
    if last is not None and last.data is not None:
        out.append((last.event, last.data))
    return out


def httpx_lines_reader(chunks: list[bytes]) -> list[tuple[str, str]]:
    """The model clients' reader before: httpx's text and line decoders, then the fields."""
    from httpx._decoders import LineDecoder, TextDecoder

    text, lines, out = TextDecoder("utf-8"), LineDecoder(), []
    event, data = "message", list[str]()

    def take(line: str) -> None:
        nonlocal event, data
        if not line:
            if data:
                out.append((event, "\n".join(data)))
            event, data = "message", []
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)

    for chunk in chunks:
        for line in lines.decode(text.decode(chunk)):
            take(line)
    for line in lines.decode(text.flush()) + lines.flush():
        take(line)
    if data:
        out.append((event, "\n".join(data)))
    return out


def httpx_sse_reader(chunks: list[bytes]) -> list[tuple[str, str]]:
    """httpx-sse's ``aiter_sse`` path without the socket: text decoding, lines, events."""
    from httpx_sse._decoders import SSEDecoder, SSELineDecoder

    text = codecs.getincrementaldecoder("utf-8")(errors="replace")
    lines, events, out = SSELineDecoder(), SSEDecoder(), []
    for chunk in chunks:
        for line in lines.decode(text.decode(chunk)):
            if (sse := events.decode(line)) is not None:
                out.append((sse.event or "message", sse.data))
    for line in lines.flush():
        if (sse := events.decode(line)) is not None:
            out.append((sse.event or "message", sse.data))
    return out


ODD: dict[str, list[bytes]] = {
    "mixed line endings": [b"data: a\r\n\r\ndata: b\n\ndata: c\r\r"],
    "CRLF split across reads": [b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n"],
    "UTF-8 character split across reads": [b"data: \xc3", b"\xa9\n\n"],
    "invalid UTF-8": [b"data: \xff\xfe ok\n\n"],
    "last event without its blank line": [b"data: a\n\ndata: tail"],
    "event with a name and no data": [b"event: ping\n\ndata: a\n\n"],
    "comment and keep-alive only": [b": keep-alive\n\n: again\n\n"],
    "field without a colon": [b"data\n\n"],
    "byte-order mark first": [b"\xef\xbb\xbfdata: a\n\n"],
}


def timed(reader: Reader, chunks: list[bytes], reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        reader(chunks)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=20_000)
    ap.add_argument("--chunk", type=int, default=4096, help="bytes per read")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    args = ap.parse_args()
    data = stream(args.events)
    chunks = [data[i:i + args.chunk] for i in range(0, len(data), args.chunk)]
    readers: dict[str, Reader] = {"loomctx": loomctx_reader, "httpx LineDecoder (before)":
                                  httpx_lines_reader}
    try:
        import httpx_sse  # noqa: F401

        readers["httpx-sse"] = httpx_sse_reader
    except ImportError:
        print("httpx-sse not installed: not compared")
    expected = loomctx_reader([data])
    result: dict[str, Any] = {"machine": platform.platform(), "python": platform.python_version(),
                              "bytes": len(data), "events": len(expected),
                              "chunk": args.chunk, "speed": {}, "odd": {}}
    print(f"{len(data) / 1e6:.1f} MB, {len(expected)} events, {len(chunks)} reads of "
          f"{args.chunk} B, median of {args.reps}")
    for name, reader in readers.items():
        assert reader(chunks) == expected, f"{name} reads the stream differently"
        seconds = timed(reader, chunks, args.reps)
        result["speed"][name] = {"seconds": round(seconds, 4),
                                 "MB_per_s": round(len(data) / 1e6 / seconds, 1)}
        print(f"  {name:28s} {seconds * 1000:8.1f} ms  {len(data) / 1e6 / seconds:7.1f} MB/s")
    print("odd streams (event, data) as each reader sees them:")
    for case, parts in ODD.items():
        seen = {name: reader(parts) for name, reader in readers.items()}
        result["odd"][case] = seen
        print(f"  {case}:")
        for name, events in seen.items():
            print(f"    {name:28s} {events!r}")
    if args.out is not None:
        args.out.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n")


if __name__ == "__main__":
    main()
