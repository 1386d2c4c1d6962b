""":class:`SQLiteStore`: the embedded default store, one file (or none) and no server.

Why SQLite: it ships with Python, survives crashes (WAL, one transaction per write call), and
FTS5 gives ranked full-text search. Rows are keyed by an integer ``pk``; a record's identity
(tenant, agent, session, id) is a unique index, and every read is restricted to one scope in SQL
or, for the vector matrix, by a mask. Chinese is handled by two external-content FTS5 indexes (see
:mod:`loomctx.stores._fts`): a ``trigram`` index over the raw text and a ``unicode61`` index over
CJK-aware tokens, their bm25 scores summed. Vectors are float32 blobs; search loads them once
into a numpy matrix (about 200 MB for 100k x 512) kept current through this object's writes and
reloaded after another connection's write to the records or their vectors (``PRAGMA
data_version`` and the file's ``index_version``, :mod:`loomctx.stores._sqlite_schema`; an
embedding another process caches reloads nothing), so repeated searches are one matrix product.

Durability: ``journal_mode=WAL`` and ``synchronous=NORMAL``. A ``put`` that returned is committed
and survives the process being killed; an OS crash or power loss may lose the last commits since
the previous checkpoint, never the file's integrity.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from loomctx.errors import ConfigError, StoreError
from loomctx.stores import _records as rec
from loomctx.stores._fts import build_query
from loomctx.stores._sqlite_rows import (
    COLUMNS,
    ORDER,
    chunks,
    existing_pks,
    fetch,
    id_in,
    retokenize,
    scope_filter,
    stored_scope,
    to_record,
    to_row,
    where_sql,
)
from loomctx.stores._sqlite_schema import connect, ensure_schema, index_version
from loomctx.stores._text import tokenizer_id
from loomctx.stores._vector_index import VectorIndex
from loomctx.stores.protocol import Hit, Level, MemoryRecord, Scope

_PAGE = 1000


def _stored_dim(conn: sqlite3.Connection) -> int | None:
    """The dimension of the stored vectors (one per store), None while there are none."""
    row = conn.execute("SELECT dim FROM vectors LIMIT 1").fetchone()
    return None if row is None else int(row[0])


class SQLiteStore:
    """A :class:`~loomctx.stores.protocol.MemoryStore` in one SQLite file.

    ``path=None`` keeps the database in memory and creates nothing on disk; a path creates that
    file (plus SQLite's ``-wal``/``-shm`` companions while open) and nothing else. A file written
    by an older loomctx is migrated when it opens (see :mod:`loomctx.stores._sqlite_schema`).
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        target = ":memory:" if path is None else os.fspath(path)
        if not isinstance(target, str) or not target:
            raise ConfigError(f"path must be a file path or None (in memory), got {path!r}")
        self.path = target
        self._lock = threading.RLock()
        self._vectors: VectorIndex | None = None
        self._conn: sqlite3.Connection | None = connect(target)
        try:
            ensure_schema(
                self._conn, target=target, tokenizer_id=tokenizer_id(), tokenize_all=retokenize
            )
        except BaseException:
            self._conn.close()
            raise

    # -- plumbing -------------------------------------------------------------------------------

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"the SQLite store {self.path!r} is closed; open a new SQLiteStore")
        return self._conn

    @contextmanager
    def _write(self, *, keep_index: bool = False) -> Iterator[sqlite3.Connection]:
        """One immediate transaction: committed on success, rolled back on any error.

        The vector index is dropped afterwards unless ``keep_index`` says the caller keeps it
        current itself (or the write does not touch vectors, levels or scopes).
        """
        with self._lock:
            conn = self._db()
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    if keep_index:  # not kept current over another connection's changes
                        self._current_index(conn)
                    yield conn
                    if keep_index and self._vectors is not None:
                        # this write's own changes counted: the index holds them
                        self._vectors.index_version = index_version(conn)
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise StoreError(f"write to SQLite store {self.path!r} failed: {exc}") from exc
            except BaseException:
                self._vectors = None
                raise
            else:
                if not keep_index:
                    self._vectors = None

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                yield self._db()
            except sqlite3.Error as exc:
                raise StoreError(f"read from SQLite store {self.path!r} failed: {exc}") from exc

    @property
    def dims(self) -> int | None:
        """The vector dimension of the stored embeddings (None while none are stored)."""
        with self._read() as conn:
            return _stored_dim(conn)

    # -- writes ---------------------------------------------------------------------------------

    def put(self, records: Sequence[MemoryRecord], vectors: np.ndarray | None = None) -> None:
        """Store (or replace) ``records`` in their own scopes, with ``vectors``, in one transaction.

        A replaced record loses its old vector unless the call gives a new one.
        """
        with self._write(keep_index=True) as conn:
            cleaned, rows = rec.prepare_put(records, vectors, _stored_dim(conn))
            old = existing_pks(conn, cleaned)
            index = self._vectors
            if index is not None and index.contains_any(old):
                self._vectors = index = None  # replaced vectors: reload on the next search
            # The delete trigger drops the old rows' index entries and vectors.
            conn.executemany("DELETE FROM records WHERE pk = ?", [(pk,) for pk in old])
            base = conn.execute("SELECT COALESCE(MAX(pk), 0) FROM records").fetchone()[0]
            pks = list(range(base + 1, base + 1 + len(cleaned)))
            conn.executemany(
                f"INSERT INTO records (pk, {COLUMNS}, terms, content_hash) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [to_row(pk, r) for pk, r in zip(pks, cleaned, strict=True)],
            )
            if rows is not None:
                conn.executemany(
                    "INSERT INTO vectors (pk, dim, vec) VALUES (?, ?, ?)",
                    [(pk, rows.shape[1], rows[i].tobytes()) for i, pk in enumerate(pks)],
                )
            if index is not None and rows is not None:
                # Committed below; an exception before then drops the index (see _write).
                index.append(pks, rows, [stored_scope(r) for r in cleaned],
                             [r.level for r in cleaned])

    def reembed(self, embed: rec.Embed) -> int:
        """Give every record that has a vector ``embed``'s vector of its content instead, in one
        transaction: all are replaced or, on any error, none. The store's dimension becomes the
        new vectors'; records stored without a vector stay without. Returns how many changed.

        The file's write lock is held while ``embed`` runs: run it while no session writes here
        (other writers wait, then fail with StoreError). Another process that keeps the file open
        reads the new vectors on its next search."""
        with self._write() as conn:
            rows = conn.execute("SELECT r.pk, r.content FROM records AS r "
                                "JOIN vectors AS v ON v.pk = r.pk ORDER BY r.pk").fetchall()
            vectors = rec.new_vectors(embed, [content for _, content in rows])
            conn.executemany(
                "UPDATE vectors SET dim = ?, vec = ? WHERE pk = ?",
                [(vectors.shape[1], vectors[i].tobytes(), pk) for i, (pk, _) in enumerate(rows)],
            )
        return len(rows)

    def delete(self, ids: Iterable[str], *, scope: Scope) -> int:
        """Delete the scope's records with these ids, and their vectors; return how many."""
        where, args = scope_filter(rec.check_scope(scope))
        removed = 0
        with self._write() as conn:
            for chunk in chunks(rec.id_list(ids)):
                sql = f"DELETE FROM records AS r {where_sql([*where, id_in(chunk)])}"
                removed += max(conn.execute(sql, [*args, *chunk]).rowcount, 0)
        return removed

    def set_level(self, ids: Iterable[str], level: Level, *, scope: Scope) -> None:
        """Move the scope's records with these ids to ``level``; unknown ids are ignored."""
        rec.check_level(level)
        where, args = scope_filter(rec.check_scope(scope))
        with self._write(keep_index=True) as conn:
            for chunk in chunks(rec.id_list(ids)):
                sql = (f"UPDATE records AS r SET level = ? {where_sql([*where, id_in(chunk)])} "
                       "RETURNING pk")
                pks = [row[0] for row in conn.execute(sql, [level, *args, *chunk]).fetchall()]
                if self._vectors is not None:
                    self._vectors.set_level(pks, level)

    # -- reads ----------------------------------------------------------------------------------

    def get(self, ids: Iterable[str], *, scope: Scope) -> list[MemoryRecord]:
        """The scope's records with ``ids``, in the order asked, missing ids skipped."""
        where, args = scope_filter(rec.check_scope(scope))
        wanted = rec.id_list(ids)
        by_id: dict[str, list[MemoryRecord]] = defaultdict(list)
        with self._read() as conn:
            for chunk in chunks(wanted):
                sql = f"SELECT {COLUMNS} FROM records r {where_sql([*where, id_in(chunk)])}"
                for row in conn.execute(sql, [*args, *chunk]):
                    record = to_record(row)
                    by_id[record.id].append(record)
        return [r for i in wanted for r in sorted(by_id.get(i, ()), key=rec.order_key)]

    def scan(self, *, scope: Scope, level: Level | None = None) -> Iterator[MemoryRecord]:
        """The scope's records (of ``level``) ordered by (timestamp, seq, id, agent, session).

        Read a page at a time: a long scan holds neither the lock nor a transaction.
        """
        rec.check_level(level, optional=True)
        where, args = scope_filter(rec.check_scope(scope), level)
        return self._pages(where, args)

    def _pages(self, where: list[str], args: list[Any]) -> Iterator[MemoryRecord]:
        after: tuple[Any, ...] | None = None
        while True:
            clause = [*where, f"({ORDER}) > (?, ?, ?, ?, ?)"] if after else where
            sql = (f"SELECT {COLUMNS} FROM records r {where_sql(clause)} "
                   f"ORDER BY {ORDER} LIMIT {_PAGE}")
            with self._read() as conn:
                rows = conn.execute(sql, [*args, *(after or ())]).fetchall()
            yield from (to_record(row) for row in rows)
            if len(rows) < _PAGE:
                return
            last = rows[-1]
            after = (last[7], last[10], last[3], last[1], last[2])

    def count(self, *, scope: Scope, level: Level | None = None) -> int:
        rec.check_level(level, optional=True)
        where, args = scope_filter(rec.check_scope(scope), level)
        with self._read() as conn:
            sql = f"SELECT COUNT(*) FROM records r {where_sql(where)}"
            row = conn.execute(sql, args).fetchone()
        return int(row[0])

    def search_lexical(
        self, query: str, *, scope: Scope, limit: int = 20, level: Level | None = None
    ) -> list[Hit]:
        """Sum of FTS5 bm25 over the terms and trigram indexes (see :mod:`loomctx.stores._fts`).

        Each index gives its ``max(4 * limit, 100)`` best matches inside the scope. A tenant-wide
        search first ranks without joining ``records`` (the join costs as much as the ranking)
        and keeps the tenant's rows; only when other tenants crowd them out of the top matches
        does it rank again with the join, so the result is the same either way.
        """
        rec.check_scope(scope)
        rec.check_limit(limit)
        rec.check_level(level, optional=True)
        fts = build_query(rec.check_query(query))
        where, args = scope_filter(scope, level)
        wide = scope.agent is None and level is None
        want = max(4 * limit, 100)
        scores: dict[int, float] = {}
        found: dict[int, MemoryRecord] = {}
        with self._read() as conn:
            for table, expr in (("records_terms", fts.terms), ("records_trigram", fts.trigram)):
                if expr is None or not limit:
                    continue
                pairs: list[tuple[int, float]] | None = None
                if wide:
                    sql = (f"SELECT rowid, bm25({table}) FROM {table} WHERE {table} MATCH ? "
                           "ORDER BY 2 LIMIT ?")
                    ranked = conn.execute(sql, [expr, want]).fetchall()
                    found.update(fetch(conn, [pk for pk, _ in ranked if pk not in found]))
                    pairs = [(pk, s) for pk, s in ranked if scope.covers(found[pk])]
                    if len(ranked) == want and len(pairs) < want:
                        pairs = None  # other tenants took places: rank inside the scope
                if pairs is None:
                    sql = (
                        f"SELECT {table}.rowid, bm25({table}) FROM {table} "
                        f"CROSS JOIN records r ON r.pk = {table}.rowid "
                        f"WHERE {table} MATCH ? {''.join(' AND ' + w for w in where)} "
                        "ORDER BY 2 LIMIT ?"
                    )
                    pairs = conn.execute(sql, [expr, *args, want]).fetchall()
                for pk, score in pairs:
                    scores[pk] = scores.get(pk, 0.0) - score
            found.update(fetch(conn, [pk for pk in scores if pk not in found]))
        return rec.top(((found[pk], s) for pk, s in scores.items()), limit)

    def search_vector(
        self, vector: np.ndarray, *, scope: Scope, limit: int = 20, level: Level | None = None
    ) -> list[Hit]:
        """Cosine similarity (a product with the cached unit-vector matrix) inside the scope."""
        rec.check_scope(scope)
        rec.check_limit(limit)
        rec.check_level(level, optional=True)
        with self._read() as conn:
            index = self._vector_index(conn)
            query = rec.query_vector(vector, index.dim)
            if not index.pks or not limit:
                return []
            best = index.search(query, limit, scope, level)
            found = index.records([pk for pk, _ in best], lambda pks: fetch(conn, pks))
        return rec.top(((found[pk], s) for pk, s in best if pk in found), limit)

    def _vector_index(self, conn: sqlite3.Connection) -> VectorIndex:
        """The cached index, reloaded when this or another connection changed the data."""
        index = self._current_index(conn)
        if index is None:
            version = conn.execute("PRAGMA data_version").fetchone()[0]
            self._vectors = index = VectorIndex.load(conn, version)
        return index

    def _current_index(self, conn: sqlite3.Connection) -> VectorIndex | None:
        """The kept index if the file still holds what it holds; else it is dropped."""
        index = self._vectors
        if index is None:
            return None
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        if index.data_version != version:  # another connection wrote: something it depends on?
            counted = index_version(conn)
            if counted is None or counted != index.index_version:
                self._vectors = None
                return None
            index.data_version = version
        return index

    # -- embedding cache ------------------------------------------------------------------------

    def cached_vectors(
        self, model: str, hashes: Sequence[str], *, tenant: str
    ) -> dict[str, np.ndarray]:
        """The tenant's cached embeddings of ``model`` for those content hashes that are cached."""
        rec.check_model(model)
        rec.check_tenant(tenant)
        out: dict[str, np.ndarray] = {}
        with self._read() as conn:
            for chunk in chunks(list(dict.fromkeys(hashes))):
                marks = ", ".join("?" * len(chunk))
                for key, blob in conn.execute(
                    "SELECT hash, vec FROM embedding_cache "
                    f"WHERE tenant = ? AND model = ? AND hash IN ({marks})",
                    [tenant, model, *chunk],
                ):
                    out[key] = np.frombuffer(blob, dtype=np.float32).copy()
        return out

    def cache_vectors(
        self, model: str, vectors: Mapping[str, np.ndarray], *, tenant: str
    ) -> None:
        """Remember the tenant's embeddings of ``model`` by content hash (replacing older ones)."""
        rec.check_model(model)
        rec.check_tenant(tenant)
        rows = rec.cache_rows(vectors)
        with self._write(keep_index=True) as conn:  # the cache is not the vector index
            conn.executemany(
                "INSERT OR REPLACE INTO embedding_cache (tenant, model, hash, dim, vec) "
                "VALUES (?, ?, ?, ?, ?)",
                [(tenant, model, k, v.shape[0], v.tobytes()) for k, v in rows.items()],
            )

    def close(self) -> None:
        """Close the database (a WAL file is checkpointed); later calls raise StoreError."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            self._vectors = None

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["SQLiteStore"]
