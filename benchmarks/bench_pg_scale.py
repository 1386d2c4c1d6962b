"""Tenant-wide recall of PostgresStore at 1M memories: bulk load, index build, query latency and
ANN recall against exact search, in one run.

Why: a service keeps every tenant's memories in one PostgreSQL table; a tenant-wide build asks
the store for one dense list and one or two lexical lists (the question, and the question with
recent-turn terms) of up to 256 memories each (``MAX_RECALL``), concurrently. That is what this
benchmark times, per query, as *tenant-wide recall*: the wall time of the three store calls run
at once, as ``UnifiedRetrievalSource`` runs them.

Data (deterministic, generated, not embedded: running the real embedder a million times would
take hours): ``--rows`` memories of ~30 words (Zipf-ranked generated words, one in five with
Chinese words, as ``bench_postgres.py``) in sessions of 100, the sessions dealt round-robin to
``--tenants`` tenants. Vectors have the default embedder's dimension (896: USE 512 + MiniLM 384)
and a topic structure: each session talks about three of 4,096 topics, each memory is its topic's
centroid plus noise plus a component shared by all (real sentence embeddings are not centred),
normalised. Rows are written with the store's own row format and binary COPY (``copy_rows``;
its trigger writes their postings), the indexes built once after, by the store's own build
step, then the postings vacuumed (what autovacuum does after a large insert).

Measured in the same run, on the same database:

- ``indexed``: the store as it ships (its vector indexes: one per tenant of 10k rows or more
  and a shared one for the rest, iterative scan and re-ranking; tenant-wide lexical lists from
  the impact-ordered postings, each term's best 8,000 postings at most, the best rows ranked
  by ``ts_rank``).
- ``probes_N``: the same store opened with ``probes=N`` instead of the default
  (``--probes``), to show what recall each step of latency buys.
- ``exact``: the same store with PostgreSQL's index scans off for the dense list (an exact,
  sequential cosine ranking of the tenant's rows) and every lexical match ranked by
  ``ts_rank`` through the GIN index, no postings read (``lexical_budget=None``): the
  reference the ANN recall is computed against, and what the store costs without its vector
  index.

Each plan also records the CPU one recall costs, ``server_cpu_ms_per_recall`` (the server's
processes, read from ``/proc`` when the server runs on this machine: any other work on that
server counts too) and ``client_cpu_ms_per_recall`` (this process): on a shared machine the wall
times depend on what else runs, these do not; on two idle cores a recall's wall time is at least
half their sum.

ANN recall@k: the share of the exact top-k dense ids the indexed search returns (k = 10 and the
full 256), over ``--recall-queries`` queries; the lexical lists (bounded against every match
ranked) by ids and by scores (rows tied at the cut are interchangeable). Writes
``benchmarks/results/pg_scale.json``.

    nice -n 10 python3 benchmarks/bench_pg_scale.py                  # 1M (20–30 min here)
    nice -n 10 python3 benchmarks/bench_pg_scale.py --rows 100000    # 100k (~2 min)
    python3 benchmarks/bench_pg_scale.py --dsn postgresql://…/db --reuse   # time an existing load
        [--load-json benchmarks/results/pg_scale.json]                    # keep its load timings
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg_pool import ConnectionPool

from loomctx.retrieval.source import MAX_RECALL
from loomctx.servers import PostgresServer
from loomctx.stores import MemoryRecord, Scope
from loomctx.stores._pg_bulk import build_indexes, copy_rows, drop_indexes, set_dims
from loomctx.stores._pg_vector import PROBES, search_settings
from loomctx.stores.postgres import PostgresStore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_store import texts, vocabulary

RESULTS = Path(__file__).resolve().parent / "results"
DIMS = 896
TOPICS = 4096
SESSION = 100
_CHUNK = 10_000
_QUERIES = (
    ("what did we decide about the database migration?", "讨论 数据库 migration tools results"),
    ("周末去爬山的计划是什么", "讨论 数据库 migration tools results"),
    ("which tool call failed and why", "讨论 数据库 migration tools results"),
    ("上下文 模型 检索 的结果", "讨论 数据库 migration tools results"),
)


class Topics:
    """The synthetic embedding space: 64 subjects, each with 64 topics near it, a component
    shared by every vector, and per-memory noise; so near neighbours are graded (same topic,
    same subject, the rest), as in a real embedding space, not one cluster against noise."""

    def __init__(self, seed: int, dims: int = DIMS) -> None:
        rng = np.random.default_rng(seed)
        subjects = rng.standard_normal((TOPICS // 64, dims)).astype(np.float32)
        self.centroids = (np.repeat(subjects, 64, axis=0)
                          + 0.8 * rng.standard_normal((TOPICS, dims)).astype(np.float32))
        self.shared = rng.standard_normal(dims).astype(np.float32) * 0.6

    def vectors(self, rng: np.random.Generator, topics: np.ndarray) -> np.ndarray:
        noise = rng.standard_normal((len(topics), self.centroids.shape[1])).astype(np.float32)
        v = self.centroids[topics] + 0.7 * noise + self.shared
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def tenant_of(session: int, tenants: int) -> str:
    return f"tenant{session % tenants}"


def chunks(rows: int, tenants: int, topics: Topics, seed: int
           ) -> Iterator[tuple[list[MemoryRecord], np.ndarray]]:
    """The memories, ``_CHUNK`` at a time, deterministic for (rows, tenants, seed)."""
    rng = np.random.default_rng(seed)
    vocab = vocabulary(rng)
    session_topics = rng.integers(0, TOPICS, size=(rows // SESSION + 1, 3))
    for start in range(0, rows, _CHUNK):
        n = min(_CHUNK, rows - start)
        body = texts(rng, vocab, n)
        idx = np.arange(start, start + n)
        sessions = idx // SESSION
        picked = session_topics[sessions, rng.integers(0, 3, size=n)]
        records = [MemoryRecord(id=f"m{i}", content=body[k], tenant=tenant_of(int(s), tenants),
                                agent="bench", session=f"s{s}", level="L4",
                                timestamp=1e9 + i, seq=i)
                   for k, (i, s) in enumerate(zip(idx.tolist(), sessions.tolist(), strict=True))]
        yield records, topics.vectors(rng, picked)


def load(url: str, rows: int, tenants: int, topics: Topics, seed: int) -> dict[str, float]:
    """Write the memories with the store's binary COPY and build its indexes; phase seconds."""
    with PostgresStore(url, timeout=60.0) as store:
        store.close()  # migrated; the load below uses one connection and one transaction
    out: dict[str, float] = {}
    with psycopg.connect(url) as conn:
        set_dims(conn, DIMS, index=False)
        drop_indexes(conn)
        start = time.perf_counter()
        done = 0
        for records, vectors in chunks(rows, tenants, topics, seed):
            copy_rows(conn, records, vectors)
            done += len(records)
            if done % 100_000 == 0:
                print(f"  copied {done:,} rows ({time.perf_counter() - start:.0f} s)", flush=True)
        out["copy_s"] = time.perf_counter() - start
        conn.commit()
        out.update(build_indexes(conn, DIMS))
        conn.commit()
    with psycopg.connect(url, autocommit=True) as conn:
        # What autovacuum does soon after a large insert: marks the postings' pages all-visible,
        # so a search reads them from the index alone (an index-only scan).
        start = time.perf_counter()
        conn.execute("VACUUM (ANALYZE) loomctx_postings")
        out["vacuum_postings_s"] = time.perf_counter() - start
    return {k: round(v, 1) for k, v in out.items()}


def queries(n: int, tenants: int, topics: Topics, seed: int
            ) -> list[tuple[str, str, str, np.ndarray]]:
    """(tenant, question, expanded question, question vector), rotating tenants and texts;
    a question's vector lies near one topic, as a question about a stored subject does."""
    rng = np.random.default_rng(seed + 1)
    vectors = topics.vectors(rng, rng.integers(0, TOPICS, size=n))
    out = []
    for i in range(n):
        question, extra = _QUERIES[i % len(_QUERIES)]
        out.append((f"tenant{i % tenants}", question, f"{question} {extra}", vectors[i]))
    return out


def summary(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)

    return {"p50_ms": round(statistics.median(ordered), 1), "p90_ms": at(0.9),
            "p99_ms": at(0.99), "min_ms": round(ordered[0], 1), "max_ms": round(ordered[-1], 1),
            "n": len(ordered)}


def recall_once(store: PostgresStore, pool: ThreadPoolExecutor, tenant: str, question: str,
                expanded: str, vector: np.ndarray) -> tuple[float, dict[str, Any]]:
    """One tenant-wide recall: the dense and the two lexical lists at once; (wall ms, lists)."""
    scope = Scope(tenant=tenant)

    def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
        start = time.perf_counter()
        result = fn()
        return (time.perf_counter() - start) * 1000, result

    start = time.perf_counter()
    dense = pool.submit(timed, lambda: store.search_vector(vector, scope=scope, limit=MAX_RECALL))
    lexical = [pool.submit(timed, lambda t=t: store.search_lexical(t, scope=scope,  # type: ignore[misc]
                                                                    limit=MAX_RECALL))
               for t in (question, expanded)]
    (dense_ms, dense_hits), *lex = [f.result() for f in (dense, *lexical)]
    wall = (time.perf_counter() - start) * 1000
    return wall, {"dense_ms": dense_ms, "lexical_ms": [m for m, _ in lex],
                  "dense": [h.record.id for h in dense_hits],
                  "lexical": [[h.record.id for h in hits] for _, hits in lex],
                  "lexical_scores": [[round(h.score, 6) for h in hits] for _, hits in lex],
                  "chinese": any("\u4e00" <= ch <= "\u9fff" for ch in question)}


class ServerCpu:
    """CPU milliseconds the server's processes have used (the postmaster's and its children's,
    from ``/proc``), when the server runs on this machine and its ``postmaster.pid`` is
    readable; else :meth:`ms` is None. On a shared machine the wall times of a recall depend on
    what else runs; the CPU it costs does not."""

    def __init__(self, url: str) -> None:
        self.master: int | None = None
        with psycopg.connect(url) as conn:
            row = conn.execute("SHOW data_directory").fetchone()
        try:
            pid_file = Path(str(row[0] if row else "")) / "postmaster.pid"
            self.master = int(pid_file.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            self.master = None

    def ms(self) -> float | None:
        if self.master is None:
            return None
        ticks = 0
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(entry.name) == self.master or int(fields[1]) == self.master:
                ticks += int(fields[11]) + int(fields[12])  # utime, stime
        return ticks * 1000 / os.sysconf("SC_CLK_TCK")


def time_plan(store: PostgresStore, qs: list[tuple[str, str, str, np.ndarray]], warm: int,
              cpu: ServerCpu | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    walls, dense, lexical, lists = [], [], [], []
    by_language: dict[str, list[float]] = {"en": [], "zh": []}
    with ThreadPoolExecutor(3) as pool:
        for q in qs[:warm]:
            recall_once(store, pool, *q)
        server_before, client_before = (cpu.ms() if cpu else None), time.process_time()
        for q in qs:
            wall, got = recall_once(store, pool, *q)
            walls.append(wall)
            dense.append(got["dense_ms"])
            lexical += got["lexical_ms"]
            by_language["zh" if got["chinese"] else "en"] += got["lexical_ms"]
            lists.append(got)
        server_after, client_after = (cpu.ms() if cpu else None), time.process_time()
    spent = {"client_cpu_ms_per_recall": round((client_after - client_before) * 1000 / len(qs), 1)}
    if server_before is not None and server_after is not None:
        spent["server_cpu_ms_per_recall"] = round((server_after - server_before) / len(qs), 1)
    return {"recall": summary(walls), "dense_call": summary(dense), **spent,
            "lexical_call": summary(lexical),
            **{f"lexical_call_{lang}": summary(ms) for lang, ms in by_language.items() if ms},
            "returned_per_list": round(statistics.mean(len(g["dense"]) for g in lists), 1)}, lists


def same_scores(got: list[float], want: list[float], k: int) -> float:
    """The share of the exact top-k scores the list has (as a multiset): rows tied at the cut
    are interchangeable, so ids alone undercount a list that ranks exactly."""
    top = Counter(want[:k])
    if not top:
        return 1.0 if not got else 0.0
    return sum((Counter(got[:k]) & top).values()) / sum(top.values())


def overlap(got: list[str], want: list[str], k: int) -> float:
    top = want[:k]
    if not top:
        return 1.0 if not got else 0.0
    return len(set(got[:k]) & set(top)) / len(top)


def exact_pool(url: str) -> ConnectionPool:
    """Connections on which the planner may not use an index scan: the dense list is an exact
    sequential ranking; the lexical lists still use the GIN index (a bitmap scan)."""
    return settings_pool(url, "SET enable_indexscan = off",
                         "SET max_parallel_workers_per_gather = 0")


def settings_pool(url: str, *settings: str) -> ConnectionPool:
    """Connections with the store's search settings, then ``settings``."""
    def configure(conn: psycopg.Connection) -> None:
        conn.execute(search_settings().encode())
        for sql in settings:
            conn.execute(sql.encode())

    return ConnectionPool(url, min_size=1, max_size=4, open=True, configure=configure,
                          kwargs={"autocommit": True}, name="bench-settings")


def tuned_server(server: PostgresServer, shared_buffers: str) -> None:
    """Give the server a production-like buffer cache (the embedded default is 128 MB, less
    than the vector index of 100k memories) and restart it."""
    with psycopg.connect(server.url, autocommit=True) as conn:
        conn.execute(f"ALTER SYSTEM SET shared_buffers = '{shared_buffers}'".encode())
    server.stop()
    server.start()


def machine() -> dict[str, Any]:
    mem = next((int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                if line.startswith("MemTotal:")), 0)
    model = next((line.split(":", 1)[1].strip()
                  for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor())
    return {"cpus": os.cpu_count(), "cpu_model": model, "ram_gib": round(mem / 2**20, 1),
            "python": platform.python_version(), "platform": platform.platform(),
            "load_average": [round(x, 2) for x in os.getloadavg()]}


def versions(url: str) -> dict[str, str]:
    with psycopg.connect(url) as conn:
        pg = conn.execute("SHOW server_version").fetchone()
        vec = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'"
                           ).fetchone()
        size = conn.execute("SELECT pg_size_pretty(pg_total_relation_size('loomctx_records'))"
                            ).fetchone()
    return {"postgresql": str(pg[0] if pg else "?"), "pgvector": str(vec[0] if vec else "?"),
            "table_size": str(size[0] if size else "?")}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000, help="memories to load")
    p.add_argument("--tenants", type=int, default=10, help="tenants the sessions are dealt to")
    p.add_argument("--queries", type=int, default=80, help="timed recalls per plan")
    p.add_argument("--recall-queries", type=int, default=20,
                   help="queries timed against exact search (exact ranking is slow)")
    p.add_argument("--dsn", help="an existing PostgreSQL database (default: start one here)")
    p.add_argument("--reuse", action="store_true",
                   help="with --dsn: the database already holds this load; time it only")
    p.add_argument("--probes", default="5,20",
                   help="comma-separated ivfflat.probes values timed beside the default")
    p.add_argument("--shared-buffers", default="4GB",
                   help="shared_buffers of the server this script starts (not with --dsn)")
    p.add_argument("--load-json", type=Path,
                   help="with --reuse: an earlier full run's JSON whose load timings to keep")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--json", type=Path, default=RESULTS / "pg_scale.json")
    args = p.parse_args(argv)
    if args.rows < SESSION or args.tenants < 1:
        p.error(f"--rows must be at least {SESSION} and --tenants at least 1, "
                f"got {args.rows!r} and {args.tenants!r}")
    if args.reuse and not args.dsn:
        p.error("--reuse needs --dsn (the database to reuse)")
    if args.load_json is not None and not args.load_json.is_file():
        p.error(f"--load-json {str(args.load_json)!r} is not a file: give the JSON of an "
                "earlier full run")
    topics = Topics(args.seed)
    doc: dict[str, Any] = {
        "benchmark": "bench_pg_scale.py", "machine": machine(),
        "data": {"rows": args.rows, "tenants": args.tenants, "session_size": SESSION,
                 "dims": DIMS, "topics": TOPICS, "limit": MAX_RECALL,
                 "note": "deterministic synthetic texts and topic-structured vectors of the "
                         "default embedder's dimension; no embedder was run"}}
    with ExitStack() as stack:
        if args.dsn:
            url = args.dsn
        else:
            server = stack.enter_context(PostgresServer())
            server.start()
            tuned_server(server, args.shared_buffers)
            url = server.create_database()
        if not args.reuse:
            print(f"loading {args.rows:,} memories into {args.tenants} tenants …", flush=True)
            doc["load"] = load(url, args.rows, args.tenants, topics, args.seed)
            print(f"  {doc['load']}", flush=True)
        elif args.load_json:
            doc["load"] = json.loads(args.load_json.read_text())["load"]
            doc["load"]["from"] = f"{args.load_json.name} (an earlier load of the same data)"
        doc["versions"] = versions(url)
        qs = queries(args.queries, args.tenants, topics, args.seed)
        store = stack.enter_context(PostgresStore(url, timeout=60.0))
        cpu = ServerCpu(url)
        doc["indexed"], lists = time_plan(store, qs, warm=8, cpu=cpu)
        doc["indexed"]["probes"] = PROBES
        print(f"  indexed: {doc['indexed']}", flush=True)
        probes = [int(x) for x in args.probes.split(",") if x.strip()]
        other_lists = {}
        for n in probes:
            with PostgresStore(url, timeout=60.0, probes=n) as p_store:
                doc[f"probes_{n}"], other_lists[n] = time_plan(p_store, qs, warm=4, cpu=cpu)
            print(f"  probes {n}: {doc[f'probes_{n}']}", flush=True)
        pool = stack.enter_context(exact_pool(url))
        exact_store = stack.enter_context(PostgresStore(pool, lexical_budget=None))
        sample = qs[:args.recall_queries]
        doc["exact"], exact_lists = time_plan(exact_store, sample, warm=1, cpu=cpu)
        print(f"  exact: {doc['exact']}", flush=True)
        got, want = lists[:len(sample)], exact_lists
        doc["ann_recall"] = {
            f"dense@{k}": round(statistics.mean(
                overlap(g["dense"], w["dense"], k) for g, w in zip(got, want, strict=True)), 4)
            for k in (10, MAX_RECALL)}
        for n in probes:
            for k in (10, MAX_RECALL):
                doc["ann_recall"][f"dense@{k}_probes_{n}"] = round(statistics.mean(
                    overlap(g["dense"], w["dense"], k)
                    for g, w in zip(other_lists[n][:len(sample)], want, strict=True)), 4)
        doc["ann_recall"].update({
            f"lexical@{k}": round(statistics.mean(
                overlap(g["lexical"][j], w["lexical"][j], k)
                for g, w in zip(got, want, strict=True) for j in (0, 1)), 4)
            for k in (10, MAX_RECALL)})
        doc["ann_recall"].update({
            f"lexical_scores@{k}": round(statistics.mean(
                same_scores(g["lexical_scores"][j], w["lexical_scores"][j], k)
                for g, w in zip(got, want, strict=True) for j in (0, 1)), 4)
            for k in (10, MAX_RECALL)})
        doc["ann_recall"]["queries"] = len(sample)
        doc["machine"]["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"\n{args.rows:,} memories, {args.tenants} tenants, limit {MAX_RECALL} per list "
          f"({doc['machine']['cpus']} cpus, {doc['machine']['ram_gib']} GiB)")
    print("| plan | recall p50 / p90 (min–max) ms | dense call p50 | lexical call p50 "
          "| CPU ms per recall (server + client) |")
    print("|---|---|---|---|---|")
    for plan in ("indexed", *(f"probes_{n}" for n in probes), "exact"):
        r = doc[plan]
        print(f"| {plan} | {r['recall']['p50_ms']} / {r['recall']['p90_ms']} "
              f"({r['recall']['min_ms']}–{r['recall']['max_ms']}) | "
              f"{r['dense_call']['p50_ms']} | {r['lexical_call']['p50_ms']} | "
              f"{r.get('server_cpu_ms_per_recall', '?')} + {r['client_cpu_ms_per_recall']} |")
    print(f"ANN recall against exact: {doc['ann_recall']}")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
