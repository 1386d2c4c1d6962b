"""Lexical search in PostgreSQL, measured: a tsvector over loomctx's tokens (what
``PostgresStore`` does) against ``pg_trgm`` word similarity over the raw text.

A background corpus of 20k generated texts (Zipf words, Chinese words mixed in, the words of the
planted facts sprinkled in as distractors) holds 40 planted facts: 20 English ones, each the only
text with its two query words, and 20 Chinese ones, each the only text with its two query words,
asked without a space between them ("苹果香蕉"), the way Chinese is typed. Reported per
language: hit@1 and recall@10 of the planted fact, and the median / p95 query latency.

- tsvector: ``PostgresStore.search_lexical`` (GIN index, ``ts_rank`` normalised by length).
- pg_trgm: ``WHERE %s <% content ORDER BY %s <<-> content`` (GIN ``gin_trgm_ops`` index, word
  similarity, default threshold 0.6), the pg_trgm form made for a short query in a long text.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import psycopg

from loomctx.stores import MemoryRecord, Scope
from loomctx.stores._pg_lexical import ROW_BUDGET
from loomctx.stores.postgres import PostgresStore

_ZH = ("苹果", "香蕉", "火车", "飞机", "医院", "学校", "图书馆", "音乐", "电影", "足球", "篮球",
       "咖啡", "茶叶", "银行", "邮局", "公园", "海洋", "森林", "沙漠", "雪山", "城市", "乡村",
       "电脑", "手机", "相机", "键盘", "屏幕", "钢琴", "吉他", "小说", "诗歌", "历史", "地理",
       "化学", "物理", "数学", "天文", "医生", "老师", "厨师")
_BACKGROUND = 20_000
_PLANTED = 20


def _corpus(rng: np.random.Generator) -> tuple[list[str], list[tuple[str, int, str]]]:
    from bench_store import texts, vocabulary

    vocab = vocabulary(rng)
    docs = texts(rng, vocab, _BACKGROUND)
    for i in range(0, len(docs), 5):  # the fact words also occur alone, as distractors
        docs[i] += " " + str(rng.choice(_ZH)) + " " + vocab[200 + int(rng.integers(0, 80))]
    queries: list[tuple[str, int, str]] = []
    for k in range(_PLANTED):
        a, b = vocab[200 + 2 * k], vocab[201 + 2 * k]
        docs.append(f"we decided that {a} goes before {b} in the release")
        queries.append(("en", len(docs) - 1, f"{a} {b}"))
        w1, w2 = _ZH[2 * k], _ZH[2 * k + 1]
        docs.append(f"我们上周讨论了{w1}和{w2}的问题")
        queries.append(("zh", len(docs) - 1, f"{w1}{w2}"))
    return docs, queries


def _score(method: Callable[[str], list[int]], queries: list[tuple[str, int, str]]
           ) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for lang in ("en", "zh"):
        mine = [(t, q) for lg, t, q in queries if lg == lang]
        times, top1, top10 = [], 0, 0
        for target, q in mine:
            start = time.perf_counter()
            ranked = method(q)
            times.append((time.perf_counter() - start) * 1000)
            top1 += bool(ranked) and ranked[0] == target
            top10 += target in ranked[:10]
        times.sort()
        out[lang] = {"hit@1": round(top1 / len(mine), 2), "recall@10": round(top10 / len(mine), 2),
                     "p50_ms": round(statistics.median(times), 2),
                     "p95_ms": round(times[int(0.95 * (len(times) - 1))], 2)}
    return out


def compare_lexical(url: str, *, lexical_budget: int | None = ROW_BUDGET) -> dict[str, Any]:
    """Both methods on a new database ``url``; ``lexical_budget`` is the store's (0: every
    tsvector search takes the narrowed first stage whenever the statistics allow one)."""
    docs, queries = _corpus(np.random.default_rng(11))
    with PostgresStore(url, timeout=30.0, lexical_budget=lexical_budget) as store:
        store.bulk_load([MemoryRecord(id=str(i), content=d) for i, d in enumerate(docs)])
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE INDEX trgm ON loomctx_records USING gin (content gin_trgm_ops)")
            conn.execute("ANALYZE loomctx_records")

            def trigram(q: str) -> list[int]:
                rows = conn.execute(
                    "SELECT id FROM loomctx_records WHERE tenant = 'default' AND %s <%% content "
                    "ORDER BY %s <<-> content LIMIT 10", (q, q)).fetchall()
                return [int(r[0]) for r in rows]

            def tsvector(q: str) -> list[int]:
                return [int(h.record.id) for h in store.search_lexical(q, scope=Scope(),
                                                                       limit=10)]

            return {"corpus": len(docs), "planted": len(queries),
                    "tsvector": _score(tsvector, queries), "pg_trgm": _score(trigram, queries)}


__all__ = ["compare_lexical"]
