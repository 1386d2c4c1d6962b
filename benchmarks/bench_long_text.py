"""What one huge text costs ``loomctx serve``: a pasted 300 KB log as a user message, and an
upstream that answers with a 20 MB reply.

The proxy runs as its own process with the default embedder (the multilingual encoder) over a
SQLite store, told the upstream's window is ``--window`` tokens (default 1,000,000: a
long-context model, so that the log, ~114k tokens, is built and sent rather than refused as
too long for the budget); the fake upstream runs on loopback in this process. One session,
four turns:

1. ``short``: a few words, to load the encoder and warm the process up (its peak RSS is the
   baseline);
2. ``log``: a user message of ``--log-kb`` KB of log lines (answered with a short reply);
3. ``huge reply``: a short question whose reply is ``--reply-mb`` MB of text;
4. ``after``: a short question, built over the session now holding both.

After each turn the process's peak resident set (``VmHWM`` of ``/proc/PID/status``) and
current RSS are read; each turn's status and wall time are recorded. The JSON goes to
``benchmarks/results/long_text.json``. Linux only.

    python3 benchmarks/bench_long_text.py [--quick] [--log-kb 300] [--reply-mb 20] [--json PATH]

The results of the runs before and after the limits (``--label``) are in
``benchmarks/results/long_text.json``: at 00ca5a1 the 300 KB log took the proxy past the
``--cap-mb`` of 3,000 MB, where the benchmark kills it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from loomctx.servers import ServerError
from loomctx.testing import FakeModelServer, Reply
from loomctx.testing.fake_server import RecordedRequest
from loomctx.testing.processes import wait_healthy

_OUT = Path(__file__).parent / "results" / "long_text.json"
ROOT = Path(__file__).resolve().parent.parent


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _status_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


def _watch(proc: subprocess.Popen[bytes], cap_mb: float, stop: threading.Event,
           killed: list[float]) -> None:
    """Kills the proxy once its RSS passes ``cap_mb`` (a shared machine is not to be taken
    down by the run that shows it can be)."""
    while not stop.wait(0.05) and proc.poll() is None:
        try:
            rss = _status_mb(proc.pid, "VmRSS")
        except (OSError, RuntimeError):
            return
        if rss > cap_mb:
            killed.append(rss)
            proc.kill()
            return


def _log(size: int, seed: int) -> str:
    """Log lines as a pasted log has them: timestamps, levels, paths, numbers, some words."""
    rnd = random.Random(seed)
    words = ("request", "failed", "retry", "connection", "timeout", "worker", "started",
             "cache", "miss", "user", "payload", "queue", "backoff", "ok", "error", "warn")
    lines, n = [], 0
    while n < size:
        line = (f"2026-11-{rnd.randint(1, 28):02d}T{rnd.randint(0, 23):02d}:"
                f"{rnd.randint(0, 59):02d}:{rnd.randint(0, 59):02d}.{rnd.randint(0, 999):03d}Z "
                f"{rnd.choice(('INFO', 'WARN', 'ERROR', 'DEBUG'))} "
                f"svc-{rnd.randint(1, 40)}/{rnd.choice(words)} "
                f"id={rnd.getrandbits(48):x} " + " ".join(rnd.choice(words) for _ in range(6))
                + f" took {rnd.randint(1, 99999)}ms")
        lines.append(line)
        n += len(line) + 1
    return "\n".join(lines)[:size]


class _Upstream(FakeModelServer):
    """Answers every request at once; the request whose last message says ``HUGE`` gets the
    huge reply. Keeps no requests (a 300 KB message resent per turn is not what is measured)."""

    def __init__(self, huge: str) -> None:
        super().__init__(respond=self._answer)
        self.huge = huge
        self.calls = 0

    def _answer(self, request: RecordedRequest) -> Reply:
        self.calls += 1
        self.requests.clear()
        body = request.body if isinstance(request.body, dict) else {}
        last = (body.get("messages") or [{}])[-1].get("content")
        return Reply(text=self.huge if last == "HUGE" else "noted.")


def run(log_kb: int, reply_mb: float, embedder: str, timeout: float,
        cap_mb: float, window: int) -> dict[str, Any]:
    huge = _log(int(reply_mb * 2**20), seed=2)
    with _Upstream(huge) as fake, tempfile.TemporaryDirectory() as tmp:
        port = _port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "loomctx.cli.main", "serve", "--upstream", fake.url + "/v1",
             "--port", str(port), "--embedder", embedder, "--store",
             str(Path(tmp) / "store.db"), "--window", str(window)],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        base = f"http://127.0.0.1:{port}"
        turns: list[dict[str, Any]] = []
        stop, killed = threading.Event(), []
        watcher = threading.Thread(target=_watch, args=(proc, cap_mb, stop, killed),
                                   daemon=True)
        watcher.start()
        warm = started = 0.0
        try:
            try:
                wait_healthy(base + "/health", proc, timeout=180)
            except ServerError:
                raise SystemExit("the proxy did not start") from None
            client = httpx.Client(timeout=timeout)
            started = _status_mb(proc.pid, "VmRSS")
            for name, content in (("short", "hello, what can you do?"),
                                  ("log", _log(log_kb * 1024, seed=1)),
                                  ("huge reply", "HUGE"),
                                  ("after", "what did the log say about timeouts?")):
                calls = fake.calls
                t0 = time.perf_counter()
                try:
                    resp = client.post(base + "/v1/chat/completions",
                                       headers={"x-loomctx-session": "bench"},
                                       json={"model": "gpt-4o", "max_tokens": 200,
                                             "messages": [{"role": "user",
                                                           "content": content}]})
                    status, detail = resp.status_code, ("" if resp.status_code == 200
                                                        else resp.text[:300])
                    size = len(resp.content)
                except httpx.HTTPError as exc:
                    status, detail, size = 0, f"{type(exc).__name__}: {exc}", 0
                seconds = time.perf_counter() - t0
                alive = proc.poll() is None
                row = {"turn": name, "sent_kb": round(len(content) / 1024, 1),
                       "status": status, "reply_kb": round(size / 1024, 1),
                       "upstream_called": fake.calls > calls, "seconds": round(seconds, 2),
                       "rss_mb": round(_status_mb(proc.pid, "VmRSS"), 1) if alive else None,
                       "peak_rss_mb": round(_status_mb(proc.pid, "VmHWM"), 1) if alive
                       else None}
                if detail:
                    row["detail"] = detail
                turns.append(row)
                print(json.dumps(row), flush=True)
                if not alive:
                    break
                if name == "short":
                    warm = _status_mb(proc.pid, "VmHWM")
            peak = _status_mb(proc.pid, "VmHWM") if proc.poll() is None else None
        finally:
            stop.set()
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    return {"embedder": embedder, "log_kb": log_kb, "reply_mb": reply_mb, "window": window,
            "rss_at_start_mb": round(started, 1), "peak_after_warm_up_mb": round(warm, 1),
            "peak_rss_mb": None if peak is None else round(peak, 1),
            "peak_growth_mb": None if peak is None else round(peak - warm, 1),
            "process_survived": peak is not None,
            "killed_at_rss_mb": round(killed[0], 1) if killed else None, "turns": turns}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="a 100 KB log and a 2 MB reply, results to long_text_quick.json")
    ap.add_argument("--log-kb", type=int, default=300)
    ap.add_argument("--reply-mb", type=float, default=20.0)
    ap.add_argument("--embedder", choices=("default", "hashing"), default="default")
    ap.add_argument("--window", type=int, default=1_000_000)
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per turn")
    ap.add_argument("--cap-mb", type=float, default=3000.0,
                    help="kill the proxy when its RSS passes this (recorded as killed)")
    ap.add_argument("--label", default="", help="a name for this run in the JSON")
    ap.add_argument("--json", type=Path, default=_OUT)
    args = ap.parse_args()
    if args.quick:
        args.log_kb, args.reply_mb = 100, 2.0
        if args.json == _OUT:
            args.json = _OUT.with_name("long_text_quick.json")
    if not Path("/proc/self/status").exists():
        print("needs Linux (/proc)", file=sys.stderr)
        return 2
    result = run(args.log_kb, args.reply_mb, args.embedder, args.timeout,
                 args.cap_mb, args.window)
    result.update({"label": args.label, "python": platform.python_version(),
                   "machine": platform.machine(), "cpus": os.cpu_count()})
    print(json.dumps({k: v for k, v in result.items() if k != "turns"}))
    runs: list[Any] = []
    if args.json.exists():
        try:
            runs = json.loads(args.json.read_text()).get("runs", [])
        except (ValueError, AttributeError):
            runs = []
    runs.append(result)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"runs": runs}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
