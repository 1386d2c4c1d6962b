"""Benchmark the SQLite memory store at agent scale: 100k records with 512-d vectors.

Why: the store is on every build's path (memory recall), so insert throughput, file size, memory
and search latency at a realistic size must be known numbers, not guesses. Text is generated
deterministically (Zipf-distributed English words with some Chinese), vectors are seeded random
unit vectors. Prints a table and writes ``benchmarks/results/store.json``.

    python3 benchmarks/bench_store.py [--records 100000] [--dim 512] [--batch 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from loomctx.stores import MemoryRecord, Scope, SQLiteStore

_SYLLABLES = (*(c + v for c in "bcdfghjklmnprstvwxz" for v in "aeiou"), "th", "st", "ng")
_CHINESE = (
    "我们", "喜欢", "周末", "爬山", "记忆", "检索", "上下文", "模型",
    "工具", "调用", "会话", "代理", "向量", "数据库", "天气", "北京",
)
_QUERIES = 50
_LIMIT = 20


def vocabulary(rng: np.random.Generator, size: int = 5000) -> list[str]:
    words = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES, size=int(rng.integers(2, 5)))))
    ordered = sorted(words)
    rng.shuffle(ordered)  # rank (frequency) independent of spelling
    return ordered


def texts(rng: np.random.Generator, vocab: list[str], n: int) -> list[str]:
    """~30 tokens each: Zipf-ranked words, one record in five with Chinese words mixed in."""
    ranks = np.minimum(rng.zipf(1.2, size=(n, 28)), len(vocab)) - 1
    out = []
    for i in range(n):
        words = [vocab[r] for r in ranks[i]]
        if i % 5 == 0:
            words[::7] = rng.choice(_CHINESE, size=len(words[::7])).tolist()
        out.append(" ".join(words))
    return out


def _unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000.0


def _summary(first: float, warm: list[float]) -> dict[str, float]:
    ordered = sorted(warm)
    return {
        "first_ms": round(first, 2),
        "median_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 2),
    }


def run(records: int, dim: int, batch: int) -> dict[str, object]:
    rng = np.random.default_rng(42)
    vocab = vocabulary(rng)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        store = SQLiteStore(path)
        start = time.perf_counter()
        for offset in range(0, records, batch):
            n = min(batch, records - offset)
            chunk = texts(rng, vocab, n)
            store.put(
                [
                    MemoryRecord(
                        id=f"r{offset + i}", content=t, timestamp=float(offset + i),
                        agent="bench", session=f"s{(offset + i) % 100}", seq=offset + i,
                    )
                    for i, t in enumerate(chunk)
                ],
                _unit(rng, n, dim),
            )
        insert_s = time.perf_counter() - start
        store.close()  # checkpoints the WAL so the file size is the real size
        size = path.stat().st_size
        store = SQLiteStore(path)

        queries = [
            " ".join(rng.choice(vocab[:2000], size=3).tolist()) for _ in range(_QUERIES - 10)
        ] + [" ".join(rng.choice(_CHINESE, size=2).tolist()) for _ in range(10)]
        tenant, session = Scope(), Scope(agent="bench", session="s7")
        lexical_first = _timed(lambda: store.search_lexical(queries[0], limit=_LIMIT, scope=tenant))
        lexical = [
            _timed(lambda q=q: store.search_lexical(q, limit=_LIMIT, scope=tenant)) for q in queries
        ]
        vectors = _unit(rng, _QUERIES, dim)
        vector_first = _timed(lambda: store.search_vector(vectors[0], limit=_LIMIT, scope=tenant))
        vector = [
            _timed(lambda v=v: store.search_vector(v, limit=_LIMIT, scope=tenant)) for v in vectors
        ]
        filtered = [
            _timed(lambda v=v: store.search_vector(v, limit=_LIMIT, scope=session))
            for v in vectors
        ]
        hits = store.search_lexical(queries[-1], limit=_LIMIT, scope=tenant)
        store.close()
    return {
        "records": records,
        "dim": dim,
        "batch": batch,
        "insert_seconds": round(insert_s, 2),
        "insert_records_per_s": round(records / insert_s),
        "file_mb": round(size / 2**20, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "search_lexical": _summary(lexical_first, lexical),
        "search_vector": _summary(vector_first, vector),
        "search_vector_session_filter": _summary(filtered[0], filtered[1:]),
        "chinese_query_hits": len(hits),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus, numpy {np.__version__}",
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results/store.json")
    args = parser.parse_args(argv)
    result = run(args.records, args.dim, args.batch)
    print(f"SQLiteStore, {args.records:,} records x {args.dim}-d, batches of {args.batch:,}")
    print(f"  insert        {result['insert_records_per_s']:>10,} records/s "
          f"({result['insert_seconds']} s)")
    print(f"  file size     {result['file_mb']:>10} MB")
    print(f"  peak RSS      {result['peak_rss_mb']:>10} MB")
    print(f"  {'search (limit 20)':<32}{'first ms':>10}{'median ms':>11}{'p95 ms':>9}")
    for key in ("search_lexical", "search_vector", "search_vector_session_filter"):
        s = result[key]
        assert isinstance(s, dict)
        print(f"  {key:<32}{s['first_ms']:>10}{s['median_ms']:>11}{s['p95_ms']:>9}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
