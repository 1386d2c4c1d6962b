""":class:`SQLiteStore`: the embedded default store, one file (or none) and no server.

Why SQLite: it ships with Python, survives crashes (WAL, one transaction per write call), and
FTS5 gives ranked full-text search. Chinese is handled by two external-content FTS5 indexes (see
:mod:`loomctx.stores._fts`): a ``trigram`` index over the raw text and a ``unicode61`` index over
CJK-aware tokens, their bm25 scores summed. Vectors are float32 blobs; search loads them once
into a numpy matrix (about 200 MB for 100k x 512) kept until the next write — by this object or,
detected with ``PRAGMA data_version``, by another process — so repeated searches are one matrix
product.

Durability: ``journal_mode=WAL`` and ``synchronous=NORMAL``. A ``put`` that returned is committed
and survives the process being killed; an OS crash or power loss may lose the last commits since
the previous checkpoint, never the file's integrity.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from loomctx.errors import ConfigError, StoreError
from loomctx.items import fingerprint
from loomctx.stores import _records as rec
from loomctx.stores._fts import build_query
from loomctx.stores._sqlite_schema import connect, ensure_schema
from loomctx.stores._text import tokenize, tokenizer_id
from loomctx.stores._vector_index import VectorIndex
from loomctx.stores.protocol import Hit, Level, MemoryRecord

_COLUMNS = (
    'id, content, level, role, timestamp, session, agent, importance, "group", seq, message, '
    "metadata"
)
_CHUNK = 500
_PAGE = 1000


class SQLiteStore:
    """A :class:`~loomctx.stores.protocol.MemoryStore` in one SQLite file.

    ``path=None`` keeps the database in memory and creates nothing on disk; a path creates that
    file (plus SQLite's ``-wal``/``-shm`` companions while open) and nothing else.
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
                self._conn, target=target, tokenizer_id=tokenizer_id(), tokenize_all=_retokenize
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
        current itself (or the write does not touch vectors, levels or sessions).
        """
        with self._lock:
            conn = self._db()
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
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

    # -- writes ---------------------------------------------------------------------------------

    def put(self, records: Sequence[MemoryRecord], vectors: np.ndarray | None = None) -> None:
        """Store (or replace) ``records`` with their ``vectors`` in one transaction.

        A replaced record loses its old vector unless the call gives a new one.
        """
        with self._write(keep_index=True) as conn:
            row = conn.execute("SELECT dim FROM vectors LIMIT 1").fetchone()
            cleaned, rows = rec.prepare_put(records, vectors, row[0] if row else None)
            ids_new = [r.id for r in cleaned]
            index = self._vectors
            if index is not None and (rows is None or index.contains_any(ids_new)):
                self._vectors = index = None  # replacements: reload on the next search
            ids = [(r.id,) for r in cleaned]
            conn.executemany("DELETE FROM records WHERE id = ?", ids)
            conn.executemany("DELETE FROM vectors WHERE id = ?", ids)
            conn.executemany(
                f"INSERT INTO records ({_COLUMNS}, terms, content_hash) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [_to_row(r) for r in cleaned],
            )
            if rows is not None:
                conn.executemany(
                    "INSERT INTO vectors (id, dim, vec) VALUES (?, ?, ?)",
                    [(r.id, rows.shape[1], rows[i].tobytes()) for i, r in enumerate(cleaned)],
                )
            if index is not None and rows is not None:
                # Committed below; an exception before then drops the index (see _write).
                index.append(ids_new, rows, [r.session for r in cleaned],
                             [r.level for r in cleaned])

    def delete(self, ids: Iterable[str]) -> int:
        """Delete these records and their vectors; return how many existed."""
        keys = [(i,) for i in rec.id_list(ids)]
        with self._write() as conn:
            removed = conn.executemany("DELETE FROM records WHERE id = ?", keys).rowcount
            conn.executemany("DELETE FROM vectors WHERE id = ?", keys)
        return max(removed, 0)

    def set_level(self, ids: Iterable[str], level: Level) -> None:
        """Move existing records to ``level``; unknown ids are ignored."""
        rec.check_level(level)
        id_list = rec.id_list(ids)
        keys = [(level, i) for i in id_list]
        with self._write(keep_index=True) as conn:
            conn.executemany("UPDATE records SET level = ? WHERE id = ?", keys)
            if self._vectors is not None:
                self._vectors.set_level(id_list, level)

    # -- reads ----------------------------------------------------------------------------------

    def get(self, ids: Iterable[str]) -> list[MemoryRecord]:
        """The stored records for ``ids``, in the order asked, missing ids skipped."""
        wanted = rec.id_list(ids)
        with self._read() as conn:
            found = _fetch(conn, wanted)
        return [found[i] for i in wanted if i in found]

    def scan(
        self, *, session: str | None = None, level: Level | None = None, agent: str | None = None
    ) -> Iterator[MemoryRecord]:
        """Matching records ordered by (timestamp, seq, id), read a page at a time."""
        rec.check_level(level, optional=True)
        where, args = _filters(session=session, level=level, agent=agent)
        return self._pages(where, args)

    def _pages(self, where: list[str], args: list[Any]) -> Iterator[MemoryRecord]:
        after: tuple[float, int, str] | None = None
        while True:
            clause = [*where, "(timestamp, seq, id) > (?, ?, ?)"] if after else where
            sql = (
                f"SELECT {_COLUMNS} FROM records r {_where(clause)} "
                f"ORDER BY timestamp, seq, id LIMIT {_PAGE}"
            )
            with self._read() as conn:
                rows = conn.execute(sql, [*args, *(after or ())]).fetchall()
            yield from (_to_record(row) for row in rows)
            if len(rows) < _PAGE:
                return
            after = (rows[-1][4], rows[-1][9], rows[-1][0])

    def count(self, *, session: str | None = None, level: Level | None = None) -> int:
        rec.check_level(level, optional=True)
        where, args = _filters(session=session, level=level)
        with self._read() as conn:
            row = conn.execute(f"SELECT COUNT(*) FROM records r {_where(where)}", args).fetchone()
        return int(row[0])

    def search_lexical(
        self, query: str, *, limit: int = 20, session: str | None = None,
        level: Level | None = None,
    ) -> list[Hit]:
        """Sum of FTS5 bm25 over the terms and trigram indexes (see :mod:`loomctx.stores._fts`)."""
        rec.check_limit(limit)
        rec.check_level(level, optional=True)
        fts = build_query(rec.check_query(query))
        where, args = _filters(session=session, level=level)
        scores: dict[int, float] = {}
        with self._read() as conn:
            for table, expr in (("records_terms", fts.terms), ("records_trigram", fts.trigram)):
                if expr is None or not limit:
                    continue
                # The join costs as much as the ranking itself: only filters pay for it.
                join = f"CROSS JOIN records r ON r.pk = {table}.rowid" if where else ""
                sql = (
                    f"SELECT {table}.rowid, bm25({table}) FROM {table} {join} "
                    f"WHERE {table} MATCH ? {''.join(' AND ' + w for w in where)} "
                    "ORDER BY 2 LIMIT ?"
                )
                for pk, score in conn.execute(sql, [expr, *args, max(4 * limit, 100)]):
                    scores[pk] = scores.get(pk, 0.0) - score
            found = _fetch(conn, list(scores), key="pk")
        best = rec.top(((r.id, scores[pk]) for pk, r in found.items()), limit)
        by_id = {r.id: r for r in found.values()}
        return [Hit(by_id[i], s) for i, s in best]

    def search_vector(
        self, vector: np.ndarray, *, limit: int = 20, session: str | None = None,
        level: Level | None = None,
    ) -> list[Hit]:
        """Cosine similarity (a product with the cached unit-vector matrix), filters applied."""
        rec.check_limit(limit)
        rec.check_level(level, optional=True)
        with self._read() as conn:
            index = self._vector_index(conn)
            query = rec.query_vector(vector, index.dim)
            if not index.ids or not limit:
                return []
            best = rec.top(index.search(query, limit, session, level), limit)
            found = _fetch(conn, [i for i, _ in best])
        return [Hit(found[i], s) for i, s in best if i in found]

    def _vector_index(self, conn: sqlite3.Connection) -> VectorIndex:
        """The cached index, reloaded when this or another connection changed the data."""
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        if self._vectors is None or self._vectors.data_version != version:
            self._vectors = VectorIndex.load(conn, version)
        return self._vectors

    # -- embedding cache ------------------------------------------------------------------------

    def cached_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached embeddings of ``model`` for those content hashes that are cached."""
        rec.check_model(model)
        keys = list(dict.fromkeys(hashes))
        out: dict[str, np.ndarray] = {}
        with self._read() as conn:
            for start in range(0, len(keys), _CHUNK):
                chunk = keys[start : start + _CHUNK]
                marks = ", ".join("?" * len(chunk))
                for key, blob in conn.execute(
                    f"SELECT hash, vec FROM embedding_cache WHERE model = ? AND hash IN ({marks})",
                    [model, *chunk],
                ):
                    out[key] = np.frombuffer(blob, dtype=np.float32).copy()
        return out

    def cache_vectors(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        """Remember embeddings of ``model`` by content hash (replacing older entries)."""
        rec.check_model(model)
        rows = rec.cache_rows(vectors)
        with self._write(keep_index=True) as conn:  # the cache is not the vector index
            conn.executemany(
                "INSERT OR REPLACE INTO embedding_cache (model, hash, dim, vec) "
                "VALUES (?, ?, ?, ?)",
                [(model, k, v.shape[0], v.tobytes()) for k, v in rows.items()],
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


def _filters(**values: str | None) -> tuple[list[str], list[Any]]:
    where = [f"r.{name} = ?" for name, value in values.items() if value is not None]
    return where, [v for v in values.values() if v is not None]


def _where(clauses: list[str]) -> str:
    return f"WHERE {' AND '.join(clauses)}" if clauses else ""


def _to_row(r: MemoryRecord) -> tuple[Any, ...]:
    message = None if r.message is None else rec.to_json(r.message, "message", r.id)
    return (
        r.id, r.content, r.level, r.role, r.timestamp, r.session, r.agent, r.importance, r.group,
        r.seq, message, rec.to_json(dict(r.metadata), "metadata", r.id),
        " ".join(tokenize(r.content)), fingerprint(r.content),
    )


def _to_record(row: tuple[Any, ...]) -> MemoryRecord:
    return MemoryRecord(
        id=row[0], content=row[1], level=row[2], role=row[3], timestamp=row[4], session=row[5],
        agent=row[6], importance=row[7], group=row[8], seq=row[9],
        message=None if row[10] is None else json.loads(row[10]), metadata=json.loads(row[11]),
    )


def _fetch(conn: sqlite3.Connection, keys: list[Any], key: str = "id") -> dict[Any, MemoryRecord]:
    """Records by ``id`` (or by ``pk``), as a dict keyed the same way."""
    out: dict[Any, MemoryRecord] = {}
    for start in range(0, len(keys), _CHUNK):
        chunk = keys[start : start + _CHUNK]
        marks = ", ".join("?" * len(chunk))
        sql = f"SELECT {_COLUMNS}, {key} FROM records WHERE {key} IN ({marks})"
        for row in conn.execute(sql, chunk):
            out[row[-1]] = _to_record(row)
    return out


def _retokenize(conn: sqlite3.Connection) -> None:
    """Rebuild the terms index after the tokenizer changed (the update trigger re-indexes)."""
    rows = conn.execute("SELECT pk, content FROM records").fetchall()
    conn.executemany(
        "UPDATE records SET terms = ? WHERE pk = ?", [(" ".join(tokenize(c)), pk) for pk, c in rows]
    )


__all__ = ["SQLiteStore"]
