"""What ``loomctx serve`` keeps resident as a tenant opens sessions, with and without the limit on
loaded sessions' bytes (``--max-session-mb``): practically unlimited, the default (16 MB),
and about three sessions' messages.

The proxy runs as its own process over a SQLite store (so the store's rows are on disk, not in
the process), with the hashing embedder; a client opens ``--sessions`` named sessions one after
the other, each with one user message of ``--words`` random words (text of all-distinct words is
the worst case for the indexes a loaded session holds). The proxy's resident set size is read
from ``/proc/PID/statm`` after a warm-up session and after the last one; per configuration the
growth per request is reported, with the size after each request (a bounded configuration
levels off). Linux only.

    python3 benchmarks/bench_proxy_memory.py [--quick] [--sessions N] [--words N] [--json PATH]

``--conversations N`` measures instead what the issue's target names: N new whole
conversations (no session header) of one ``--kb`` user message each, with the default limits;
RSS is sampled every 25 conversations after ``--warm-up`` of them, and the samples' spread
around the first one is reported (flat: within ±10 %).

    python3 benchmarks/bench_proxy_memory.py --conversations 500 --kb 168 --warm-up 100 \
        --json benchmarks/results/proxy_memory_flat.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import socket
import string
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx

from loomctx.servers import ServerError
from loomctx.testing.processes import wait_healthy
from loomctx.testing.windowed import WindowedFakeServer

_OUT = Path(__file__).parent / "results" / "proxy_memory.json"
ROOT = Path(__file__).resolve().parent.parent


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_mb(pid: int) -> float:
    pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _text(rnd: random.Random, words: int) -> str:
    return " ".join("".join(rnd.choice(string.ascii_lowercase) for _ in range(rnd.randint(3, 9)))
                    for _ in range(words))


def measure(upstream: str, store: str, sessions: int, words: int,
            session_mb: float | None) -> dict[str, Any]:
    port = _port()
    extra = ["--max-session-mb", str(session_mb)] if session_mb is not None else []
    proc = subprocess.Popen(
        [sys.executable, "-m", "loomctx.cli.main", "serve", "--upstream", upstream, "--port",
         str(port), "--embedder", "hashing", "--store", store, "--window", "128000", *extra],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_healthy(base + "/health", proc, timeout=120)
        except ServerError:
            raise SystemExit("the proxy did not start") from None
        rnd = random.Random(7)
        client = httpx.Client(timeout=300)

        def say(session: str) -> int:
            content = _text(rnd, words)
            resp = client.post(base + "/v1/chat/completions",
                               headers={"x-loomctx-session": session},
                               json={"model": "gpt-4o", "max_tokens": 20,
                                     "messages": [{"role": "user", "content": content}]})
            resp.raise_for_status()
            return len(content)

        say("warm-up")
        start = _rss_mb(proc.pid)
        sent, trace = 0, []
        for i in range(sessions):
            sent += say(f"s{i}")
            trace.append(round(_rss_mb(proc.pid), 1))
        end = trace[-1]
        loaded = len(client.get(base + "/v1/loomctx/sessions").json()["sessions"])
        return {"max_session_mb": session_mb if session_mb is not None else 16.0,
                "sessions": sessions, "message_kb": round(sent / sessions / 1024, 1),
                "rss_start_mb": round(start, 1), "rss_end_mb": round(end, 1),
                "rss_per_request_mb": round((end - start) / sessions, 2),
                "sessions_loaded_at_end": loaded, "rss_mb_after_each": trace}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def flat(upstream: str, store: str, conversations: int, kb: int, warm_up: int,
         ) -> dict[str, Any]:
    """RSS over ``conversations`` new whole conversations of one ``kb`` KB message each."""
    port = _port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "loomctx.cli.main", "serve", "--upstream", upstream, "--port",
         str(port), "--embedder", "hashing", "--store", store, "--window", "128000"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    words = kb * 1024 // 7  # random words average 6 letters and a space
    try:
        try:
            wait_healthy(base + "/health", proc, timeout=120)
        except ServerError:
            raise SystemExit("the proxy did not start") from None
        rnd = random.Random(11)
        client = httpx.Client(timeout=300)
        client.post(base + "/v1/chat/completions", json={  # a short first message
            "model": "gpt-4o", "max_tokens": 20,
            "messages": [{"role": "user", "content": "hello"}]}).raise_for_status()
        samples: list[tuple[int, float]] = []
        for i in range(warm_up + conversations):
            resp = client.post(base + "/v1/chat/completions", json={
                "model": "gpt-4o", "max_tokens": 20,
                "messages": [{"role": "user", "content": _text(rnd, words)}]})
            resp.raise_for_status()
            done = i + 1 - warm_up
            if done >= 0 and done % 25 == 0:
                samples.append((done, round(_rss_mb(proc.pid), 1)))
                print(samples[-1], flush=True)
        first = samples[0][1]
        rss = [v for _, v in samples]
        return {"conversations": conversations, "warm_up": warm_up, "message_kb": kb,
                "rss_after_warm_up_mb": first, "rss_end_mb": rss[-1],
                "rss_min_mb": min(rss), "rss_max_mb": max(rss),
                "spread_pct": [round(100 * (min(rss) - first) / first, 1),
                               round(100 * (max(rss) - first) / first, 1)],
                "rss_mb_every_25": samples}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="8 sessions of 3,000 words")
    ap.add_argument("--sessions", type=int, default=40)
    ap.add_argument("--words", type=int, default=10_000)
    ap.add_argument("--json", type=Path, default=_OUT)
    ap.add_argument("--conversations", type=int, default=None,
                    help="measure RSS over this many new whole conversations instead")
    ap.add_argument("--kb", type=int, default=168, help="--conversations: message size")
    ap.add_argument("--warm-up", type=int, default=100,
                    help="--conversations: conversations before the first sample")
    args = ap.parse_args()
    if not Path("/proc/self/statm").exists():
        print("needs Linux (/proc)", file=sys.stderr)
        return 2
    if args.conversations:
        with WindowedFakeServer(window=128_000, default="ok") as fake, \
                tempfile.TemporaryDirectory() as tmp:
            fake.requests = _Forgetful()
            row = flat(fake.url + "/v1", str(Path(tmp) / "store.db"), args.conversations,
                       args.kb, args.warm_up)
        print(json.dumps({k: v for k, v in row.items() if k != "rss_mb_every_25"}))
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"machine": platform.platform(),
                                         "python": platform.python_version(), **row},
                                        indent=2) + "\n", encoding="utf-8")
        return 0
    sessions, words = (8, 3000) if args.quick else (args.sessions, args.words)
    rows = []
    with WindowedFakeServer(window=128_000, default="ok") as fake, \
            tempfile.TemporaryDirectory() as tmp:
        fake.requests = _Forgetful()  # the fake keeps nothing either
        small = round(3 * words * 7 / 2**20, 3)  # about three sessions' messages
        for n, limit in enumerate((100_000.0, None, small)):
            row = measure(fake.url + "/v1", str(Path(tmp) / f"store{n}.db"), sessions, words,
                          limit)
            rows.append(row)
            print(json.dumps(row), flush=True)
    out = {"machine": platform.platform(), "python": platform.python_version(),
           "sessions": sessions, "words": words, "rows": rows}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


class _Forgetful(list):  # type: ignore[type-arg]
    def append(self, item: object) -> None:
        pass


if __name__ == "__main__":
    raise SystemExit(main())
