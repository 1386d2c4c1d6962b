"""Lexical search of the PostgreSQL store inside an agent, session or level, bounded: how many
rows ``ts_rank`` must score. (A tenant-wide search ranks from the impact-ordered postings of
:mod:`loomctx.stores._pg_postings` instead; the exact ranking, ``lexical_budget=None``, is
:func:`ranked_sql`.)

Why: ``ts_rank`` has no index to rank from, so a query ORing its terms scores every row that
holds any of them. Over a large tenant a query made of common words matches a good share of
its rows, and fetching and ranking them all becomes the largest cost of a tenant-wide build
(measured in ``benchmarks/HISTORY.md``, PostgreSQL + pgvector beside SQLite).

When the terms' estimated matches exceed :data:`ROW_BUDGET`, the search runs in two stages:

1. the *narrow* query: the rare terms ORed, plus every pair of distinct common terms ANDed
   (``c1 & c2 | c1 & c3 | ...``), plus each common term that contains another query term
   (below): a row holding one common word and nothing else is left out.
   ``ts_rank`` adds one share per matched query term (repeats of one term add at most ~0.6 of a
   share more), so a row matching two terms, or a rare one, outranks a row of the same length
   matching one common term: when the narrow query fills ``limit``, its top rows are (up to
   length normalisation) those of the full query.
2. only when it returns fewer than ``limit`` rows: the full OR query, ranked together with the
   first stage's rows (or, when the first stage cannot run, the rare terms' rows).

Each stage reads and ranks a *bounded* set: the first :func:`stage_rows` rows the index
yields for its query (:func:`bounded_sql`). That is every match while the scope holds no more
than the bound; past it, a stage's list is the best of the rows read, not of all of them, so
the work stops growing with the tenant. The bound is :data:`STAGE_FACTOR` budgets: at a
million memories in ten tenants (~4,500 rows of a common word per tenant), 8,000 rows kept 100%
of the exact top 10 and 99% of the exact 256; 4,000 (a budget of 1,000) kept 91% and 86%;
ranking every match (before the bound) cost up to ~160 ms a list (``benchmarks/bench_pg_scale.py``).

Pairs skip a common term that is part of a longer common term of the query (a CJK bigram
``上下`` of the word ``上下文``): the pair would match every row holding the word. The longer
term is a clause of its own instead: a row holding ``上下文`` matches three query terms
(``上下文``, ``上下``, ``下文``) and outranks a pair; left out, such rows were missing from the
first stage's list (at a million memories, 44–47% of the exact 256 kept for a question with
``上下文`` and ``数据库``, 80% of the top 10). Frequencies
come from ``pg_stats.most_common_elems`` of the ``terms`` column (what ANALYZE and autovacuum
collect), read once per :data:`STATS_TTL` seconds per store; a term not listed is rarer than the
rarest listed one. Without statistics (a table never analysed) every query is the full OR.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from itertools import combinations
from typing import Any

from loomctx.stores._pg_rows import COLUMNS, TABLE, tsquery_of, where_sql

ROW_BUDGET = 2000
"""Estimated matching rows up to which the full OR query runs directly (~20 ms of ranking)."""
STAGE_FACTOR = 4
"""Budgets of rows a stage ranks at most (see :func:`stage_rows`)."""
STATS_TTL = 300.0
"""Seconds a store keeps the term frequencies before reading ``pg_stats`` again."""
MAX_PAIRED = 8
"""Common terms paired at most (the rarest ones): 28 pairs."""

_STATS_SQL = (
    "SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs, c.reltuples "
    "FROM pg_stats s JOIN pg_class c ON c.oid = to_regclass(s.schemaname || '.' || s.tablename) "
    f"WHERE s.tablename = '{TABLE}' AND s.attname = 'terms' "
    "AND s.schemaname = ANY(current_schemas(false))"
)


class TermStats:
    """Estimated rows per term of one store's table, read from ``pg_stats`` and cached."""

    def __init__(self, select: Callable[[str, Sequence[Any]], list[tuple[Any, ...]]],
                 *, ttl: float = STATS_TTL) -> None:
        self._select = select
        self._ttl = ttl
        self._read_at: float | None = None
        self._rows: dict[str, float] = {}
        self._floor = 0.0

    def estimates(self, terms: Sequence[str]) -> list[float] | None:
        """Estimated matching rows of each term (None: the table has no statistics yet)."""
        now = time.monotonic()
        if self._read_at is None or now - self._read_at > self._ttl:
            self._refresh()
            self._read_at = now
        if not self._rows:
            return None
        return [self._rows.get(t, self._floor) for t in terms]

    def _refresh(self) -> None:
        found = self._select(_STATS_SQL, ())
        self._rows, self._floor = {}, 0.0
        if not found or found[0][0] is None or found[0][1] is None:
            return
        elems, freqs, reltuples = found[0]
        total = max(float(reltuples), 0.0)
        # The frequencies are followed by their minimum, their maximum and the null frequency.
        listed = freqs[:len(elems)]
        self._rows = {e: float(f) * total for e, f in zip(elems, listed, strict=True)}
        self._floor = min(listed, default=0.0) * total


def narrow_query(terms: Sequence[str], estimates: Sequence[float],
                 budget: int = ROW_BUDGET) -> str | None:
    """The stage-1 tsquery for ``terms`` (None: the full OR query is cheap enough, or no
    narrower query would keep a row the full one ranks high)."""
    if sum(estimates) <= budget:
        return None
    rare = _rare(terms, estimates, budget)
    common = [t for t in sorted(terms, key=dict(zip(terms, estimates, strict=True)).__getitem__)
              if t not in rare]
    paired = [t for t in common if not any(t != o and t in o for o in common)][:MAX_PAIRED]
    compound = [t for t in common if any(t != o and o in t for o in terms)]
    if len(paired) < 2 and not compound:
        return None
    parts = [tsquery_of([t]) for t in rare + compound]
    parts += [f"{tsquery_of([a])} & {tsquery_of([b])}" for a, b in combinations(paired, 2)]
    return " | ".join(p for p in parts if p)


def rare_query(terms: Sequence[str], estimates: Sequence[float],
               budget: int = ROW_BUDGET) -> str | None:
    """The rare terms ORed, when the full query is over ``budget`` (None: it is not, or no term
    is rare): rows the bounded second stage keeps whatever the bound, since the first stage,
    which holds them, could not run (fewer than two common terms to pair)."""
    if sum(estimates) <= budget:
        return None
    return tsquery_of(_rare(terms, estimates, budget))


def _rare(terms: Sequence[str], estimates: Sequence[float], budget: int) -> list[str]:
    """The rarest terms, while their estimated matches stay within the budget."""
    rare: list[str] = []
    spent = 0.0
    for i in sorted(range(len(terms)), key=lambda i: estimates[i]):
        if spent + estimates[i] > budget:
            break
        rare.append(terms[i])
        spent += estimates[i]
    return rare


def stage_rows(budget: int, limit: int) -> int:
    """Matches a stage reads and ranks at most: enough to fill ``limit``."""
    return max(STAGE_FACTOR * budget, limit)


def ranked_sql(where: list[str]) -> str:
    """Every row of the scope matching the tsquery ``m``, ranked by the full query ``q``, ties
    by (id, agent, session) as the store orders its hits, so which of the rows tied at the cut
    are kept does not depend on the scan order (arguments: q, m, the scope's, limit)."""
    return (f"SELECT {COLUMNS}, ts_rank(r.terms, q, 1) AS score "
            f"FROM {TABLE} r, CAST(%s AS tsquery) q, CAST(%s AS tsquery) m "
            f"{where_sql([*where, 'r.terms @@ m'])} "
            f"ORDER BY score DESC, r.id, r.agent, r.session LIMIT %s")


def bounded_sql(where: list[str]) -> str:
    """The best of the first ``cap`` rows of the scope matching the tsquery ``m``, ranked by
    the full query ``q`` (arguments: q, m, the scope's, cap, limit): the LIMIT comes before the
    ranking, so the server fetches and scores at most ``cap`` rows."""
    return (f"SELECT {COLUMNS}, ts_rank(c.terms, q, 1) AS score "
            f"FROM CAST(%s AS tsquery) q, CAST(%s AS tsquery) m CROSS JOIN LATERAL ("
            f"SELECT {COLUMNS}, r.terms FROM {TABLE} r {where_sql([*where, 'r.terms @@ m'])} "
            f"LIMIT %s) c ORDER BY score DESC LIMIT %s")


def merge(first: list[tuple[Any, ...]], more: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """``first`` then the rows of ``more`` not in it (a record is (tenant, agent, session, id):
    the first four columns)."""
    seen = {row[:4] for row in first}
    return first + [row for row in more if row[:4] not in seen]


__all__ = ["STAGE_FACTOR", "MAX_PAIRED", "ROW_BUDGET", "STATS_TTL", "TermStats",
           "bounded_sql", "stage_rows", "merge", "narrow_query", "ranked_sql", "rare_query"]
