"""Bounds at the edge of ``loomctx serve``: what a hostile client's request head and connections
cost everyone else, on three HTTP stacks, in one run.

Stacks (the service in a process of its own, hashing embedder, ``/health`` needs no upstream):

- ``guarded``: what ``loomctx serve`` runs, uvicorn's httptools protocol behind
  :mod:`loomctx.service.guard` with the default :class:`~loomctx.service.limits.EdgeLimits`;
- ``httptools``: uvicorn's httptools protocol alone (the stack of 00ca5a1);
- ``h11``: uvicorn's h11 protocol with ``h11_max_incomplete_event_size`` at 64 KB.

Cases, each measured while a client on another address (127.0.0.2) asks ``GET /health`` every
20 ms (its p50 and max latency are reported):

- ``header``: one unfinished 64 MB header line sent as fast as the socket takes it: seconds
  until the server answers or closes (None: still open 5 s after the last byte), and the
  server's peak RSS growth;
- ``heads``: four unfinished 100 MB heads at once: the same;
- ``drip``: 200 connections each sending a header byte a second: how many the server still
  holds after 12 s and 30 s (the guard's header timeout is 10 s);
- ``crowd``: 200 idle connections from one address: how many the server keeps after 2 s;
- ``requests``: 3,000 keep-alive ``GET /health`` from one client: requests/s, and the server's
  CPU milliseconds per request (the guard's per-request cost; steadier than the wall time on a
  loaded machine).

    python3 benchmarks/bench_edge.py [--stacks guarded httptools h11] [--cases ...]
                                     [--json benchmarks/results/edge.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

CASES = ("header", "heads", "drip", "crowd", "requests")


def _serve(stack: str, port: int) -> None:
    """The child: the service on ``stack`` until killed."""
    import uvicorn

    from loomctx.service import ServiceOptions, create_app
    from loomctx.service.guard import guarded
    from loomctx.service.limits import EdgeLimits
    from loomctx.testing import HashingEmbedder

    options = ServiceOptions(upstream="http://127.0.0.1:9/v1", embedder=HashingEmbedder())
    extra: dict[str, Any] = {"http": stack}
    if stack == "guarded":
        extra = {"http": guarded(EdgeLimits()), "timeout_keep_alive": 5}
    elif stack == "h11":
        extra["h11_max_incomplete_event_size"] = 64 * 1024
    uvicorn.run(create_app(options, own_process=True), host="127.0.0.1", port=port,
                log_level="error", access_log=False, **extra)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


@contextlib.contextmanager
def _server(stack: str) -> Iterator[tuple[int, int]]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, __file__, "--serve", stack, str(port)],
                            env={**os.environ})
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit(f"the {stack} server did not start")
            time.sleep(0.1)
        yield port, proc.pid
    finally:
        proc.kill()
        proc.wait()


class _Watch:
    """``/health`` from 127.0.0.2 every 20 ms, and the server's RSS, while a case runs."""

    def __init__(self, port: int, pid: int) -> None:
        self.port, self.pid = port, pid
        self.latencies: list[float] = []
        self.failures = 0
        self.rss_before = _rss_mb(pid)
        self.rss_peak = self.rss_before
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._health), threading.Thread(target=self._rss)]

    def _health(self) -> None:
        transport = httpx.HTTPTransport(local_address="127.0.0.2")
        with httpx.Client(transport=transport, timeout=60) as client:
            while not self._stop.is_set():
                start = time.perf_counter()
                try:
                    client.get(f"http://127.0.0.1:{self.port}/health")
                    self.latencies.append((time.perf_counter() - start) * 1000)
                except httpx.HTTPError:
                    self.failures += 1
                self._stop.wait(0.02)

    def _rss(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(OSError):
                self.rss_peak = max(self.rss_peak, _rss_mb(self.pid))
            self._stop.wait(0.05)

    def __enter__(self) -> _Watch:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join()

    def report(self) -> dict[str, Any]:
        lat = sorted(self.latencies)
        return {"health_p50_ms": round(statistics.median(lat), 1) if lat else None,
                "health_max_ms": round(lat[-1], 1) if lat else None,
                "health_count": len(lat),
                "health_failures": self.failures,
                "rss_growth_mb": round(self.rss_peak - self.rss_before, 1)}


def _open_until_closed(sock: socket.socket, wait: float) -> bool:
    sock.settimeout(wait)
    try:
        sock.recv(65536)
        return False
    except TimeoutError:
        return True
    except OSError:
        return False


def _big_head(port: int, megabytes: int) -> float | None:
    """Seconds from the first byte until the server answers or closes; None if it is still
    open 5 s after the last byte."""
    with socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
        start = time.perf_counter()
        try:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ")
            block = b"a" * (1 << 20)
            for _ in range(megabytes):
                sock.sendall(block)
        except OSError:
            return time.perf_counter() - start
        if _open_until_closed(sock, 5.0):
            return None
        return time.perf_counter() - start


def case_header(port: int, pid: int, heads: int = 1, megabytes: int = 64) -> dict[str, Any]:
    results: list[float | None] = [None] * heads

    def one(i: int) -> None:
        results[i] = _big_head(port, megabytes)

    with _Watch(port, pid) as watch:
        time.sleep(0.5)  # /health unloaded first, then during the heads and after them
        threads = [threading.Thread(target=one, args=(i,)) for i in range(heads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        time.sleep(0.5)
    return {"heads": heads, "megabytes": megabytes,
            "refused_s": [None if r is None else round(r, 2) for r in results],
            **watch.report()}


def case_drip(port: int, pid: int, sockets: int = 200) -> dict[str, Any]:
    conns = []
    for _ in range(sockets):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        conns.append(s)
    alive = {s: True for s in conns}
    held: dict[str, int] = {}
    with _Watch(port, pid) as watch:
        start = time.monotonic()
        for mark in (12, 30):
            while time.monotonic() - start < mark:
                for s in conns:
                    if alive[s]:
                        try:
                            s.sendall(b"X")
                        except OSError:
                            alive[s] = False
                time.sleep(1.0)
            held[f"open_after_{mark}s"] = sum(
                1 for s in conns if alive[s] and _open_until_closed(s, 0.01))
    for s in conns:
        s.close()
    return {"sockets": sockets, **held, **watch.report()}


def case_crowd(port: int, pid: int, sockets: int = 200) -> dict[str, Any]:
    with _Watch(port, pid) as watch:
        conns = [socket.create_connection(("127.0.0.1", port), timeout=5)
                 for _ in range(sockets)]
        time.sleep(2.0)
        kept = sum(1 for s in conns if _open_until_closed(s, 0.01))
        for s in conns:
            s.close()
    return {"sockets": sockets, "kept_after_2s": kept, **watch.report()}


def _cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def case_requests(port: int, pid: int, n: int = 3000) -> dict[str, Any]:
    with httpx.Client(timeout=30) as client:
        for _ in range(200):
            client.get(f"http://127.0.0.1:{port}/health")
        cpu, start = _cpu_s(pid), time.perf_counter()
        for _ in range(n):
            client.get(f"http://127.0.0.1:{port}/health")
        took, cpu = time.perf_counter() - start, _cpu_s(pid) - cpu
    return {"requests": n, "per_second": round(n / took), "mean_ms": round(took / n * 1000, 3),
            "server_cpu_ms_per_request": round(cpu / n * 1000, 3)}


RUN: dict[str, Callable[[int, int], dict[str, Any]]] = {
    "header": case_header, "heads": lambda p, pid: case_header(p, pid, 4, 100),
    "drip": case_drip, "crowd": case_crowd, "requests": case_requests}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--serve", nargs=2, metavar=("STACK", "PORT"), help=argparse.SUPPRESS)
    ap.add_argument("--stacks", nargs="+", default=["guarded", "httptools", "h11"],
                    choices=("guarded", "httptools", "h11"))
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args()
    if args.serve:
        _serve(args.serve[0], int(args.serve[1]))
        return
    out: dict[str, Any] = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                           "stacks": {}}
    for stack in args.stacks:
        out["stacks"][stack] = {}
        for case in args.cases:
            with _server(stack) as (port, pid):  # a fresh server per case
                result = RUN[case](port, pid)
            out["stacks"][stack][case] = result
            print(f"{stack:10} {case:9} {json.dumps(result)}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
