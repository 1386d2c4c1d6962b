"""Session memory at scale: add N messages to a SQLite-backed session (embedding included),
then time warm builds over the N stored items (four questions, asked again and again), then
builds of questions asked for the first time (``new_question_build_ms``).

Run: python benchmarks/bench_memory.py [--messages 100000] [--embedder use|hashing]
Writes benchmarks/results/memory.json.

With ``--db PATH`` the store is kept at PATH: a first run fills it, later runs (of this checkout
or another one, ``PYTHONPATH=other``) reopen the session and time only the builds, so two
versions can be compared on the same stored data in minutes instead of one ingest each.

With ``--db PATH --peer DIR`` both versions run at once, build for build: this checkout and the
checkout at DIR each open the stored session in a process of its own, and the builds alternate
between them (which goes first alternates too). A shared machine's speed drifts by a quarter
within minutes; builds taken side by side see the same drift, so the ratio of each pair says
which version is faster where two runs one after the other would not. Writes
``results/memory_paired.json``. With ``--peer-db PATH`` the peer opens a copy of its own; a
copy not there yet is filled by the peer's code (the same messages), since an older checkout
may not read the schema this one writes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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


def _batch(texts: list[str], start: int, size: int) -> list[dict[str, Any]]:
    """The messages ``texts[start:start + size]``, users and assistants in turn."""
    return [{"role": ("user", "assistant")[(start + i) % 2], "content": t, "id": f"m{start + i}",
             "timestamp": 1.6e9 + 60 * (start + i)}
            for i, t in enumerate(texts[start:start + size])]


NEW_QUESTIONS = 12


def _new_questions(n: int, *, seed: int | None = None, tag: str = "") -> list[str]:
    """Questions no earlier run asked (a number drawn per run): each costs its embedding and the
    memories it finds first, as an agent's next user turn does. One ``seed`` gives the same
    words and number; ``tag`` tells two such lists apart."""
    rng = np.random.default_rng(seed)
    run = int(rng.integers(10**9))
    return [f"What happened with the {a} and the {b} (case {tag}{run}-{i})?"
            for i, (a, b) in enumerate(rng.choice(WORDS[:33], size=(n, 2)))]


ROOT = Path(__file__).resolve().parent.parent
WARM_UP = 5  # builds before timing: the second wide search makes the store's int8 copy


def _open(db: Path, embedder_name: str) -> Any:  # a Session of whichever checkout runs it
    from loomctx import HashingEmbedder, MemoryOptions, Session, SQLiteStore
    from loomctx.embed import UniversalSentenceEncoder

    embedder = UniversalSentenceEncoder() if embedder_name == "use" else HashingEmbedder()
    return Session("bench", store=SQLiteStore(db), embedder=embedder, model="gpt-4o",
                   memory=MemoryOptions(l1_max_tokens=2000), clock=lambda: 1.7e9)


def _serve(args: argparse.Namespace) -> int:
    """One side of ``--peer``: open the stored session (filling it first with ``--fill``),
    then build once per line read (the line is the build's number, or a new question after
    ``?``) and answer with its wall and CPU time."""
    s = _open(args.db, args.embedder)
    if args.fill:  # this side's own code writes its own schema
        add = getattr(s, "add_messages_sync", None) or s.add_messages  # older: sync
        texts = _texts(args.messages)
        for start in range(0, len(texts), args.batch):
            add(_batch(texts, start, args.batch))
    for i in range(WARM_UP):
        s.build_sync(QUERIES[i % len(QUERIES)], max_tokens=args.max_tokens)
    print("ready", flush=True)
    for line in sys.stdin:
        query = line[1:].strip() if line.startswith("?") else QUERIES[int(line) % len(QUERIES)]
        t, c = time.perf_counter(), time.process_time()
        r = s.build_sync(query, max_tokens=args.max_tokens)
        wall, cpu = (time.perf_counter() - t) * 1000, (time.process_time() - c) * 1000
        print(json.dumps({"ms": wall, "cpu_ms": cpu, "over": r.tokens > args.max_tokens}),
              flush=True)
    return 0


def _spread(values: list[float]) -> dict[str, float]:
    v = sorted(values)
    return {"median": round(statistics.median(v), 2), "p25": round(v[len(v) // 4], 2),
            "p75": round(v[(3 * len(v)) // 4], 2), "min": round(v[0], 2)}


def _commit(tree: Path) -> str:
    done = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() or "unknown"


def _stored(db: Path) -> int:
    """How many messages the session stored at ``db`` holds."""
    from loomctx import Scope, SQLiteStore

    store = SQLiteStore(db)
    try:
        return store.count(scope=Scope())
    finally:
        store.close()


def _paired(args: argparse.Namespace) -> int:
    """``--peer``: this checkout and the peer's, build for build on the same stored session
    (or, with ``--peer-db``, the peer on its own copy of it)."""
    dbs = {"this": args.db, "peer": args.peer_db or args.db}
    if not args.db.exists():
        raise SystemExit(f"--peer needs a filled --db: {args.db} does not exist (run once "
                         "with --db to fill it)")
    # A --peer-db not there yet is filled by the peer's own code with as many messages as --db
    # holds (the same ones): an older checkout may not read the schema this one writes.
    fill = None if dbs["peer"].exists() else _stored(args.db)
    if not (args.peer / "loomctx" / "__init__.py").exists():
        raise SystemExit(f"--peer {args.peer} is not a loomctx checkout (no loomctx/ in it)")
    sides = {"this": ROOT, "peer": args.peer.resolve()}
    procs = {}
    for name, tree in sides.items():
        procs[name] = subprocess.Popen(
            [sys.executable, __file__, "--serve", "--db", str(dbs[name]), "--max-tokens",
             str(args.max_tokens), "--embedder", args.embedder, "--batch", str(args.batch),
             *(["--fill", "--messages", str(fill)] if name == "peer" and fill else [])],
            env={**os.environ, "PYTHONPATH": str(tree)}, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True)
    try:
        for name, p in procs.items():
            assert p.stdout is not None
            if p.stdout.readline().strip() != "ready":
                raise SystemExit(f"the {name} side did not open the session")
        times: dict[str, list[dict]] = {name: [] for name in procs}
        # New questions: the same two words for both sides, each its own number (a question
        # one side asked is in the other's embedding cache when they share a file).
        seed = int(np.random.default_rng().integers(2**32))
        fresh = {name: _new_questions(args.builds, seed=seed, tag=name) for name in procs} \
            if args.new_questions else None
        for i in range(args.builds):
            for name in (("this", "peer") if i % 2 == 0 else ("peer", "this")):
                p = procs[name]
                assert p.stdin is not None and p.stdout is not None
                p.stdin.write(f"?{fresh[name][i]}\n" if fresh else f"{i}\n")
                p.stdin.flush()
                times[name].append(json.loads(p.stdout.readline()))
    finally:
        for p in procs.values():
            if p.stdin is not None:
                p.stdin.close()
            p.wait()
    ratio = [a["ms"] / b["ms"] for a, b in zip(times["this"], times["peer"], strict=True)]
    kind = "new_question_build" if args.new_questions else "warm_build"
    out = {
        "builds": args.builds, "max_tokens": args.max_tokens, "embedder": args.embedder,
        "peer": _commit(sides["peer"]), "this": _commit(ROOT),
        "same_file": dbs["this"].resolve() == dbs["peer"].resolve(),
        "load_average": os.getloadavg()[0],
        f"{kind}_ms": {name: _spread([t["ms"] for t in ts]) for name, ts in times.items()},
        f"{kind}_cpu_ms": {name: _spread([t["cpu_ms"] for t in ts])
                           for name, ts in times.items()},
        "this_over_peer": _spread(ratio),
        "over_budget": sum(t["over"] for ts in times.values() for t in ts),
    }
    out_path = args.out or Path(__file__).parent / "results" / "memory_paired.json"
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--builds", type=int, default=30)
    ap.add_argument("--max-tokens", type=int, default=8000)
    ap.add_argument("--embedder", choices=("use", "hashing"), default="use")
    ap.add_argument("--quick", action="store_true", help="10k messages, 10 builds")
    ap.add_argument("--out", type=Path, default=None,
                    help="results file (default results/memory.json, with --peer "
                         "results/memory_paired.json)")
    ap.add_argument("--db", type=Path, default=None,
                    help="keep the store here and reuse the session it holds (builds only)")
    ap.add_argument("--peer", type=Path, default=None,
                    help="another loomctx checkout: time its builds and this one's in turn "
                         "on the session --db holds")
    ap.add_argument("--peer-db", type=Path, default=None,
                    help="with --peer: the peer opens this copy of --db (default: the same "
                         "file, as two processes of one deployment would); a file not there "
                         "yet is filled by the peer's own code with the messages --db holds")
    ap.add_argument("--new-questions", action="store_true",
                    help="with --peer: each build asks a question neither side asked before")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--fill", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.quick:
        args.messages, args.builds = 10_000, 10
    if args.serve:
        return _serve(args)
    if args.peer is None and (args.peer_db is not None or args.new_questions):
        ap.error("--peer-db and --new-questions go with --peer")
    if args.peer is not None:
        if args.db is None:
            ap.error("--peer needs --db: the stored session both checkouts open")
        return _paired(args)
    args.out = args.out or Path(__file__).parent / "results" / "memory.json"

    from loomctx import Scope

    texts = _texts(args.messages)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.db or Path(tmp) / "memory.db"
        t_open = time.perf_counter()
        s = _open(path, args.embedder)
        open_s = time.perf_counter() - t_open
        store, embedder = s.memory.store, s.memory.embedder
        reused = store.count(scope=s.memory.scope)
        if reused and reused != args.messages:
            raise SystemExit(f"{path} holds {reused} messages, not --messages {args.messages}")
        if reused:
            texts = []  # a kept session: only the builds are timed
        t0 = time.perf_counter()
        for start in range(0, len(texts), args.batch):
            s.add_messages_sync(_batch(texts, start, args.batch))
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
        new_ms = []
        for q in _new_questions(NEW_QUESTIONS):
            t = time.perf_counter()
            r = s.build_sync(q, max_tokens=args.max_tokens)
            new_ms.append((time.perf_counter() - t) * 1000)
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
        # a question asked for the first time: its embedding, and the memories it finds first
        # (read from the store, counted and tokenized once per process) — an agent's next turn
        "new_question_build_ms": {"median": round(statistics.median(new_ms), 2),
                                  "max": round(max(new_ms), 2), "n": len(new_ms)},
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
