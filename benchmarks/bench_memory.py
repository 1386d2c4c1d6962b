"""Session memory at scale: add N messages to a SQLite-backed session (embedding included),
then time warm builds over the N stored items.

Run: python benchmarks/bench_memory.py [--messages 100000] [--embedder use|hashing]
Writes benchmarks/results/memory.json.

With ``--db PATH`` the store is kept at PATH: a first run fills it, later runs (of this checkout
or another one, ``PYTHONPATH=other``) reopen the session and time only the builds, so two
versions can be compared on the same stored data in minutes instead of one ingest each.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

WORDS = [
    "project",
    "budget",
    "meeting",
    "deadline",
    "weather",
    "train",
    "ticket",
    "hiking",
    "weekend",
    "dog",
    "cat",
    "garden",
    "report",
    "invoice",
    "customer",
    "shipment",
    "Lyon",
    "Hamburg",
    "Milano",
    "refund",
    "policy",
    "paperwork",
    "email",
    "doctor",
    "dentist",
    "birthday",
    "gift",
    "concert",
    "museum",
    "recipe",
    "pasta",
    "coffee",
    "tea",
    "周末",
    "爬山",
    "会议",
    "报告",
    "客户",
    "发票",
    "天气",
    "咖啡",
]
QUERIES = [
    "When is the project deadline?",
    "What did we decide about the Hamburg shipment?",
    "周末去哪里爬山？",
    "Which refund policy applies to the customer in Lyon?",
]


def _texts(n: int, seed: int = 3) -> list[str]:
    rng = np.random.default_rng(seed)
    return [
        f"msg {i}: " + " ".join(rng.choice(WORDS, size=int(rng.integers(8, 30)))) for i in range(n)
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--builds", type=int, default=30)
    ap.add_argument("--max-tokens", type=int, default=8000)
    ap.add_argument("--embedder", choices=("use", "hashing"), default="use")
    ap.add_argument("--quick", action="store_true", help="10k messages, 10 builds")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "memory.json")
    ap.add_argument("--db", type=Path, default=None,
                    help="keep the store here and reuse the session it holds (builds only)")
    args = ap.parse_args(argv)
    if args.quick:
        args.messages, args.builds = 10_000, 10

    from loomctx import HashingEmbedder, MemoryOptions, Scope, Session, SQLiteStore
    from loomctx.embed import UniversalSentenceEncoder

    embedder = UniversalSentenceEncoder() if args.embedder == "use" else HashingEmbedder()
    texts = _texts(args.messages)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.db or Path(tmp) / "memory.db"
        store = SQLiteStore(path)
        t_open = time.perf_counter()
        s = Session(
            "bench",
            store=store,
            embedder=embedder,
            model="gpt-4o",
            memory=MemoryOptions(l1_max_tokens=2000),
            clock=lambda: 1.7e9,
        )
        open_s = time.perf_counter() - t_open
        reused = store.count(scope=s.memory.scope)
        if reused and reused != args.messages:
            raise SystemExit(f"{path} holds {reused} messages, not --messages {args.messages}")
        if reused:
            texts = []  # a kept session: only the builds are timed
        t0 = time.perf_counter()
        for start in range(0, len(texts), args.batch):
            chunk = texts[start : start + args.batch]
            s.add_messages_sync(
                [
                    {
                        "role": ("user", "assistant")[(start + i) % 2],
                        "content": t,
                        "id": f"m{start + i}",
                        "timestamp": 1.6e9 + 60 * (start + i),
                    }
                    for i, t in enumerate(chunk)
                ]
            )
        add_s = time.perf_counter() - t0
        first = time.perf_counter()
        s.build_sync(QUERIES[0], max_tokens=args.max_tokens)
        first_ms = (time.perf_counter() - first) * 1000
        times, cpu = [], []
        for i in range(args.builds):
            q = QUERIES[i % len(QUERIES)]
            t, c = time.perf_counter(), time.process_time()
            r = s.build_sync(q, max_tokens=args.max_tokens)
            times.append((time.perf_counter() - t) * 1000)
            cpu.append((time.process_time() - c) * 1000)
            assert r.tokens <= args.max_tokens
        file_mb = sum(f.stat().st_size for f in path.parent.iterdir()
                      if f.name.startswith(path.name)) / 1e6
        stored = store.count(scope=Scope())
        store.close()
    times.sort()
    out = {
        "messages": args.messages,
        "stored": stored,
        "embedder": embedder.name,
        **({"reopened_seconds": round(open_s, 1)} if reused else {
            "add_seconds": round(add_s, 1),
            "add_messages_per_s": round(args.messages / add_s)}),
        "first_build_ms": round(first_ms, 1),
        "warm_build_ms": {
            "median": round(statistics.median(times), 2),
            "p95": round(times[int(0.95 * (len(times) - 1))], 2),
            "min": round(times[0], 2),
            "max": round(times[-1], 2),
            "n": len(times),
        },
        # CPU of the process (both threads) per build: steadier than wall time on a busy host
        "warm_build_cpu_ms": {"median": round(statistics.median(cpu), 2),
                              "min": round(min(cpu), 2)},
        "max_tokens": args.max_tokens,
        "file_mb": round(file_mb, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
