""":class:`PostgresStore`: memory shared by many processes and machines, in PostgreSQL + pgvector.

Why PostgreSQL: several agents or service replicas need one memory with transactions, and
pgvector keeps the vectors beside the rows, so a scope filter and a cosine ranking are one query.
Every query names the tenant (and the agent, session and level when the scope does); the vector
search uses IVFFlat indexes of half-precision copies (:mod:`loomctx.stores._pg_vector`: one of
its own for each large tenant, a shared one for the rest) with pgvector's iterative scan, so a
narrow scope still fills its ``limit``, and its exact cosine scores are recomputed from the
stored vectors.

Lexical search is a tsvector over the SQLite store's tokens (words, CJK characters and bigrams)
with a GIN index, ranked by ``ts_rank`` with length normalisation; a tenant-wide search finds
its best rows from impact-ordered postings (:mod:`loomctx.stores._pg_postings`) and ranks only
those. ``pg_trgm`` matches
character trigrams, not words, and found almost none of the planted facts the tsvector found
(``benchmarks/bench_postgres.py``; the run is in ``benchmarks/HISTORY.md``).

Connections come from a :class:`psycopg_pool.ConnectionPool` (see
:mod:`loomctx.stores._pg_pool`: checked before each use, so after a server restart the first
operation reconnects). Every PostgreSQL failure reaches the caller as
:class:`~loomctx.errors.StoreError` naming the server, never a raw driver error.
"""

from __future__ import annotations

import heapq
import logging
import math
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import psycopg
from psycopg_pool import ConnectionPool

from loomctx.errors import ConfigError, StoreError
from loomctx.stores import _pg_lexical as lex
from loomctx.stores import _pg_postings as postings
from loomctx.stores import _pg_vector as vec
from loomctx.stores import _records as rec
from loomctx.stores._pg_bulk import (
    build_index,
    bulk_load,
    copy_rows,
    ensure_vector_index,
    rebuild_outgrown,
    replace_vectors,
    retokenize,
    set_dims,
)
from loomctx.stores._pg_lexical import ROW_BUDGET, TermStats, narrow_query
from loomctx.stores._pg_pool import PgConnections
from loomctx.stores._pg_rows import (
    COLUMNS,
    INSERT_COLUMNS,
    ORDER,
    TABLE,
    check_text,
    query_terms,
    scope_filter,
    to_record,
    to_row,
    tsquery_of,
    where_sql,
)
from loomctx.stores._pg_schema import ensure_schema
from loomctx.stores._text import tokenizer_id
from loomctx.stores.protocol import Hit, Level, MemoryRecord, Scope

log = logging.getLogger("loomctx.stores")

_PAGE = 1000
COPY_THRESHOLD = 2000
"""A ``put`` of at least this many records is written with COPY instead of INSERT."""
INDEX_WAIT = 30.0
"""Seconds ``reembed`` waits for older transactions to end before it gives up building the
vector index for the new dimension."""
INSERT_NEW_MAX = 64
"""The most records a ``put`` first tries to write with one INSERT (see ``_insert_new``)."""
OUTGROWN_EVERY = 10.0
"""Seconds between two looks, after a write with vectors, at whether the table outgrew its
vector index. What it reads (the planner's row estimate) moves only when autovacuum or ANALYZE
runs, so a look per write cost every write a statement for nothing."""


class PostgresStore:
    """A :class:`~loomctx.stores.protocol.MemoryStore` in a PostgreSQL database with pgvector.

    ``url_or_pool`` is a ``postgresql://`` URL (the store opens and closes its own pool) or a
    :class:`psycopg_pool.ConnectionPool` the caller owns. ``dims`` fixes the vector dimension up
    front; by default the first stored vectors decide it. ``min_size``/``max_size`` size the
    pool (one connection per concurrent operation). ``timeout`` bounds how long an operation
    waits for a connection, so an outage fails as ``StoreError`` instead of hanging; after one
    such failure, operations wait at most 0.25 s until a connection works again.
    ``connect_timeout`` bounds one connection attempt. ``lexical_budget`` is how many matching
    rows (estimated from the table's statistics) a lexical search ranks before it first tries
    a narrower query; each stage of the search ranks at most four budgets of rows (see
    :mod:`loomctx.stores._pg_lexical`), and a tenant-wide search reads at most four budgets of
    postings per term (:mod:`loomctx.stores._pg_postings`); None ranks every match with
    ``ts_rank`` (no postings).
    ``probes`` is how many lists of the vector index a search reads first (more: better recall,
    slower; see :mod:`loomctx.stores._pg_vector`). The
    database needs the ``vector`` extension (created when the user may) and is migrated when it
    opens.
    """

    def __init__(
        self, url_or_pool: str | ConnectionPool, *, dims: int | None = None,
        min_size: int = 1, max_size: int = 8, timeout: float = 3.0,
        connect_timeout: int = 5, lexical_budget: int | None = ROW_BUDGET,
        probes: int = vec.PROBES,
    ) -> None:
        if isinstance(probes, bool) or not isinstance(probes, int) or probes < 1:
            raise ConfigError(f"probes must be an int >= 1 (IVF lists a vector search reads "
                              f"first), got {probes!r}")
        if lexical_budget is not None and (isinstance(lexical_budget, bool) or
                                           not isinstance(lexical_budget, int) or
                                           lexical_budget < 0):
            raise ConfigError(f"lexical_budget must be an int >= 0 or None (rank every match), "
                              f"got {lexical_budget!r}")
        if dims is not None and (isinstance(dims, bool) or not isinstance(dims, int) or
                                 dims < 1):
            raise ConfigError(f"dims must be a positive int or None (inferred), got {dims!r}")
        self._probes = probes
        self._outgrown_at = -math.inf
        """When (monotonic) :meth:`put` last looked whether the index is outgrown."""
        self._db = PgConnections(url_or_pool, min_size=min_size, max_size=max_size,
                                 timeout=timeout, connect_timeout=connect_timeout, probes=probes)
        self.where = self._db.where
        """host:port/database of the server (no credentials), as error messages name it."""
        self._lexical_budget = lexical_budget
        self._term_stats = TermStats(self._db.select)
        try:
            with self._db.conn() as conn:
                self._dims = ensure_schema(conn, where=self.where, tokenizer_id=tokenizer_id(),
                                           retokenize=retokenize)
                if dims is not None:
                    with conn.transaction():
                        self._dims = set_dims(conn, dims)
                if self._dims is not None:
                    ensure_vector_index(conn, self._dims)
        except BaseException:
            self.close()
            raise

    @property
    def dims(self) -> int | None:
        """The vector dimension of the stored embeddings (None until the first are stored)."""
        return self._dims

    # -- writes ---------------------------------------------------------------------------------

    def put(self, records: Sequence[MemoryRecord], vectors: np.ndarray | None = None) -> None:
        """Store (or replace) ``records`` in their own scopes, with ``vectors``, in one transaction.

        A replaced record loses its old vector unless the call gives a new one. Large calls
        (``COPY_THRESHOLD`` records or more) are written with COPY.
        """
        cleaned, rows = rec.prepare_put(records, vectors, self._dims)
        for r in cleaned:
            check_text(r)
        if not self._insert_new(cleaned, rows):
            with self._db.tx() as conn:
                if rows is not None and rows.shape[0] and self._dims is None:
                    self._dims = set_dims(conn, rows.shape[1])
                self._delete_identities(conn, cleaned)
                if len(cleaned) >= COPY_THRESHOLD:
                    copy_rows(conn, cleaned, rows)
                elif cleaned:
                    values = [to_row(r, None if rows is None else rows[i])
                              for i, r in enumerate(cleaned)]
                    marks = ", ".join(["%s"] * len(values[0]))
                    with conn.cursor() as cur:
                        cur.executemany(f"INSERT INTO {TABLE} ({INSERT_COLUMNS}) "
                                        f"VALUES ({marks})", values)
        if rows is not None and time.monotonic() - self._outgrown_at >= OUTGROWN_EVERY:
            self._rebuild_if_outgrown()

    def _rebuild_if_outgrown(self) -> None:
        """Build the vector index again when the table has outgrown it, after a write.

        In a transaction of its own, after the write's: a rebuild takes the table for itself,
        so one begun inside a write would wait for every other writer while holding the
        write's lock, and two processes doing so deadlock. The records are stored by now: a
        failure here is the index's, logged and left to the next look."""
        if self._dims is None:
            return
        self._outgrown_at = time.monotonic()
        try:
            with self._db.tx() as conn:
                if vec.outgrown(conn):
                    rebuild_outgrown(conn, self._dims)
        except StoreError as exc:
            log.warning("the vector index was not rebuilt (the next write looks again): %s",
                        exc)

    def _insert_new(self, cleaned: list[MemoryRecord], rows: np.ndarray | None) -> bool:
        """Write ``cleaned`` with one INSERT when none of them is stored yet (what a session
        adding its messages does): a statement is a transaction of its own, so the delete and
        the explicit transaction (four statements where one does) are needed only to replace
        a record. False, with nothing written, when one is stored already (the statement
        fails whole) or this path does not fit (many records, the vector dimension still to
        set, a caller's pool outside autocommit)."""
        if not cleaned or len(cleaned) > INSERT_NEW_MAX:
            return False
        if rows is not None and self._dims is None:
            return False
        values = [to_row(r, None if rows is None else rows[i]) for i, r in enumerate(cleaned)]
        marks = "(" + ", ".join(["%s"] * len(values[0])) + ")"
        with self._db.conn() as conn:
            if not conn.autocommit:
                return False
            try:
                conn.execute(f"INSERT INTO {TABLE} ({INSERT_COLUMNS}) VALUES "
                             f"{', '.join([marks] * len(values))}",
                             [v for row in values for v in row])
            except psycopg.errors.UniqueViolation:
                return False
        return True

    def bulk_load(self, records: Sequence[MemoryRecord], vectors: np.ndarray | None = None,
                  *, rebuild_index: bool | None = None) -> None:
        """Load many records with COPY, in one transaction; the same result as :meth:`put`.

        The vector and lexical indexes are dropped and built again after the copy when
        ``rebuild_index`` (by default: when the batch is at least as large as what the table
        already holds), which is several times faster than growing them row by row.
        """
        cleaned, rows = rec.prepare_put(records, vectors, self._dims)
        for r in cleaned:
            check_text(r)
        with self._db.tx() as conn:
            if rows is not None and rows.shape[0] and self._dims is None:
                self._dims = set_dims(conn, rows.shape[1], index=False)
            self._delete_identities(conn, cleaned)
            bulk_load(conn, cleaned, rows, self._dims, rebuild_index)

    def reembed(self, embed: rec.Embed) -> int:
        """Give every record that has a vector ``embed``'s vector of its content instead, in one
        transaction: all are replaced or, on any error, none. The store's dimension becomes the
        new vectors'; records stored without a vector stay without. Returns how many changed.

        It waits for open transactions that read the table (dropping the index takes the table
        for itself), and reads and writes wait for it: run it while no session uses the store. Other
        processes that keep a ``PostgresStore`` of this database open must open it again: each
        remembers the dimension it read when it opened. The vector index is built for the new
        dimension after the commit, once no transaction older than it is open (waiting up to
        ``INDEX_WAIT`` seconds); if one stays open, StoreError says so: the new vectors are in
        and searched without the index until a later ``reembed`` builds it."""
        with self._db.tx() as conn:
            changed, dims = replace_vectors(conn, embed)
        self._dims = dims
        if dims is None:
            return changed
        deadline = time.monotonic() + INDEX_WAIT
        while True:
            try:
                with self._db.tx() as conn:
                    build_index(conn, dims)
                return changed
            except StoreError as exc:
                if not isinstance(exc.__cause__, psycopg.errors.DataException):
                    raise  # not the replaced rows: the server is down, or worse
                if time.monotonic() >= deadline:
                    raise StoreError(
                        f"re-embedded {changed} records of PostgreSQL store {self.where} "
                        f"(committed), but its vector index for dimension {dims} could not be "
                        f"built: a transaction older than the re-embedding is still open "
                        f"({exc}); vector search works without the index, more slowly; run "
                        "reembed again once that transaction has ended") from exc
                time.sleep(0.25)

    def _delete_identities(self, conn: psycopg.Connection, records: list[MemoryRecord]) -> None:
        by_tenant: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
        for r in records:
            by_tenant[r.tenant].append((r.id, r.agent or "", r.session or ""))
        for tenant, keys in by_tenant.items():
            ids, agents, sessions = (list(col) for col in zip(*keys, strict=True))
            conn.execute(
                f"DELETE FROM {TABLE} r USING unnest(%s::text[], %s::text[], %s::text[]) "
                "AS k(id, agent, session) WHERE r.tenant = %s AND r.id = k.id "
                "AND r.agent = k.agent AND r.session = k.session",
                (ids, agents, sessions, tenant),
            )

    def delete(self, ids: Iterable[str], *, scope: Scope) -> int:
        """Delete the scope's records with these ids, and their vectors; return how many."""
        where, args = scope_filter(rec.check_scope(scope))
        wanted = rec.id_list(ids)
        if not wanted:
            return 0
        with self._db.tx() as conn:
            cur = conn.execute(f"DELETE FROM {TABLE} r {where_sql([*where, 'r.id = ANY(%s)'])}",
                               [*args, wanted])
            return max(cur.rowcount, 0)

    def set_level(self, ids: Iterable[str], level: Level, *, scope: Scope) -> None:
        """Move the scope's records with these ids to ``level``; unknown ids are ignored."""
        rec.check_level(level)
        where, args = scope_filter(rec.check_scope(scope))
        wanted = rec.id_list(ids)
        if not wanted:
            return
        with self._db.tx() as conn:
            conn.execute(
                f"UPDATE {TABLE} r SET level = %s {where_sql([*where, 'r.id = ANY(%s)'])}",
                [level, *args, wanted],
            )

    # -- reads ----------------------------------------------------------------------------------

    def get(self, ids: Iterable[str], *, scope: Scope) -> list[MemoryRecord]:
        """The scope's records with ``ids``, in the order asked, missing ids skipped."""
        where, args = scope_filter(rec.check_scope(scope))
        wanted = rec.id_list(ids)
        if not wanted:
            return []
        by_id: dict[str, list[MemoryRecord]] = defaultdict(list)
        sql = f"SELECT {COLUMNS} FROM {TABLE} r {where_sql([*where, 'r.id = ANY(%s)'])}"
        for row in self._db.select(sql, [*args, wanted]):
            record = to_record(row)
            by_id[record.id].append(record)
        return [r for i in wanted for r in sorted(by_id.get(i, ()), key=rec.order_key)]

    def scan(self, *, scope: Scope, level: Level | None = None) -> Iterator[MemoryRecord]:
        """The scope's records (of ``level``) ordered by (timestamp, seq, id, agent, session),
        read a page at a time (keyset pagination: no cursor held open between pages)."""
        rec.check_level(level, optional=True)
        where, args = scope_filter(rec.check_scope(scope), level)
        return self._pages(where, args)

    def _pages(self, where: list[str], args: list[Any]) -> Iterator[MemoryRecord]:
        after: tuple[Any, ...] | None = None
        while True:
            clause = [*where, f"({ORDER}) > (%s, %s, %s, %s, %s)"] if after else where
            sql = (f"SELECT {COLUMNS} FROM {TABLE} r {where_sql(clause)} "
                   f"ORDER BY {ORDER} LIMIT {_PAGE}")
            rows = self._db.select(sql, [*args, *(after or ())])
            yield from (to_record(row) for row in rows)
            if len(rows) < _PAGE:
                return
            last = rows[-1]
            after = (last[8], last[11], last[3], last[1], last[2])

    def count(self, *, scope: Scope, level: Level | None = None) -> int:
        rec.check_level(level, optional=True)
        where, args = scope_filter(rec.check_scope(scope), level)
        [(n,)] = self._db.select(f"SELECT COUNT(*) FROM {TABLE} r {where_sql(where)}", args)
        return int(n)

    def search_lexical(
        self, query: str, *, scope: Scope, limit: int = 20, level: Level | None = None
    ) -> list[Hit]:
        """``ts_rank`` (length-normalised) of the query's tokens, ORed, inside the scope.

        A tenant-wide search (no agent, session or level) sums the terms' impacts from the
        postings index and ranks only the best rows with ``ts_rank``; each term gives at most
        four budgets of postings, its best (see :mod:`loomctx.stores._pg_postings`). A narrower
        scope, when the terms match many rows, ranks the rows holding a rare term or two common
        ones first, then (when those do not fill ``limit``) every match; each stage ranks at
        most four budgets of rows (see :mod:`loomctx.stores._pg_lexical`), never every match of
        a large tenant.
        """
        rec.check_scope(scope)
        rec.check_limit(limit)
        rec.check_level(level, optional=True)
        terms = query_terms(rec.check_query(query))
        full = tsquery_of(terms)
        if full is None or not limit:
            return []
        where, args = scope_filter(scope, level)
        budget = self._lexical_budget
        rows: list[tuple[Any, ...]] = []
        if budget is None:
            rows = self._db.select(lex.ranked_sql(where), [full, full, *args, limit])
            return rec.top(((to_record(row), float(row[-1])) for row in rows), limit)
        if scope.agent is None and scope.session is None and level is None:
            rows = self._db.select(postings.ranked_sql(), postings.arguments(
                terms, scope.tenant, lex.stage_rows(budget, limit), limit, full))
            # rows tied at the cut come too: order the rows as rec.top orders hits (agent and
            # session None are stored as ''), and build records of the kept ones only
            kept = heapq.nsmallest(limit, rows, key=lambda r: (-r[-1], r[3], r[1], r[2]))
            return [Hit(to_record(row), float(row[-1])) for row in kept]
        estimates = self._term_stats.estimates(terms)
        # The first stage (rare terms and pairs of common ones) may fill the list alone; the
        # rare terms alone (nothing to pair) never do: a common word's rows may rank higher.
        narrow = narrow_query(terms, estimates, budget) if estimates else None
        first = narrow or (lex.rare_query(terms, estimates, budget) if estimates else None)
        cap = lex.stage_rows(budget, limit)
        if first:
            rows = self._db.select(lex.bounded_sql(where), [full, first, *args, cap, limit])
            if narrow and len(rows) >= limit:
                return rec.top(((to_record(row), float(row[-1])) for row in rows), limit)
        rows = lex.merge(rows, self._db.select(lex.bounded_sql(where),
                                               [full, full, *args, cap, limit]))
        return rec.top(((to_record(row), float(row[-1])) for row in rows), limit)

    def search_vector(
        self, vector: np.ndarray, *, scope: Scope, limit: int = 20, level: Level | None = None
    ) -> list[Hit]:
        """Cosine similarity inside the scope: candidates in the vector index's order (IVFFlat
        over halfvec, iterative scan), scored from the stored float32 vectors."""
        rec.check_scope(scope)
        rec.check_limit(limit)
        rec.check_level(level, optional=True)
        dims = self._dims
        query = rec.query_vector(vector, dims)
        if dims is None or not limit:
            return []
        where, args = scope_filter(scope, level)
        distance = f"(r.embedding::vector({dims}) <=> %s::vector({dims}))"
        sql = (f"SELECT {COLUMNS}, 1 - {distance} FROM {TABLE} r "
               f"{where_sql([*where, 'r.embedding IS NOT NULL'])} "
               f"ORDER BY {vec.order_sql(dims)} LIMIT %s")
        qv = vec.QueryVector(query)
        if self._db.own:  # its connections are configured once with the search settings
            rows = self._db.select(sql, [qv, *args, qv, limit])
        else:
            with self._db.tx() as conn:
                conn.execute(vec.search_settings(self._probes, local=True).encode())
                rows = conn.execute(sql, [qv, *args, qv, limit]).fetchall()
        return rec.top(((to_record(row), float(row[-1])) for row in rows), limit)

    # -- embedding cache ------------------------------------------------------------------------

    def cached_vectors(
        self, model: str, hashes: Sequence[str], *, tenant: str
    ) -> dict[str, np.ndarray]:
        """The tenant's cached embeddings of ``model`` for those content hashes that are cached."""
        rec.check_model(model)
        rec.check_tenant(tenant)
        wanted = [h for h in dict.fromkeys(hashes) if isinstance(h, str) and "\x00" not in h]
        if not wanted:
            return {}
        rows = self._db.select("SELECT hash, vec FROM loomctx_embedding_cache "
                            "WHERE tenant = %s AND model = %s AND hash = ANY(%s)",
                            [tenant, model, wanted])
        return {key: np.frombuffer(vec, dtype=np.float32).copy() for key, vec in rows}

    def cache_vectors(
        self, model: str, vectors: Mapping[str, np.ndarray], *, tenant: str
    ) -> None:
        """Remember the tenant's embeddings of ``model`` by content hash (replacing older ones)."""
        rec.check_model(model)
        rec.check_tenant(tenant)
        rows = rec.cache_rows(vectors)
        if not rows:
            return
        with self._db.tx() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO loomctx_embedding_cache (tenant, model, hash, vec) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (tenant, model, hash) "
                "DO UPDATE SET vec = excluded.vec",
                [(tenant, model, k, v.astype(np.float32).tobytes()) for k, v in rows.items()],
            )

    def close(self) -> None:
        """Close the pool when this store opened it; later calls raise StoreError."""
        self._db.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["COPY_THRESHOLD", "PostgresStore"]
