"""``benchmarks/_load.py``: the throughput benchmark's load generator reads every answer whole
(``Content-Length`` or chunked) and stops at the first refused request."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from loomctx.testing.windowed import WindowedFakeServer

LOAD = Path(__file__).resolve().parents[2] / "benchmarks" / "_load.py"


def _load(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(LOAD), url, *args], capture_output=True,
                          text=True, timeout=60, check=False)


def test_every_request_is_answered_and_timed() -> None:
    with WindowedFakeServer(window=10**9, default="ok") as up:
        done = _load(up.url, "--clients", "3", "--requests", "4", "--session-header")
        assert done.returncode == 0, done.stderr
        run = json.loads(done.stdout)
        assert len(run["latencies_s"]) == 12 and up.accepted == 12
        assert run["wall_s"] > 0 and run["cpu_s"] > 0


class _Chunked(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[bytes]] = []

    def do_POST(self) -> None:
        _Chunked.seen.append(self.rfile.read(int(self.headers["content-length"])))
        status = 200 if len(_Chunked.seen) < 3 else 429
        self.send_response(status)
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for part in (b'{"choices": ', b'[]}'):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def chunked() -> Iterator[str]:
    _Chunked.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Chunked)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_chunked_answers_are_read_whole_and_a_refusal_stops_the_run(chunked: str) -> None:
    done = _load(chunked, "--clients", "1", "--requests", "5")
    assert done.returncode != 0 and "429" in done.stderr
    assert len(_Chunked.seen) == 3  # two answers read whole on one connection, then the 429
    assert all(json.loads(body)["model"] == "gpt-4o" for body in _Chunked.seen)
