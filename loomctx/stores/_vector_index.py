"""An in-memory cosine index over the SQLite store's vectors, rebuilt after writes.

Reading 100k blobs back from SQLite takes about a second; a matrix product over them takes tens
of milliseconds. So the store loads every vector once into one float32 matrix, with the scope and
filter columns (tenant, agent, session, level) as small integer codes, and searches that until
the data changes. Rows are named by the records' ``pk``; every search is masked to one scope.

The records a search returns are kept with the index too (:meth:`VectorIndex.records`): reading
and decoding a search's 256 rows (two JSON columns each) cost more than the matrix product over
100k vectors, and successive searches of one session return mostly the same records. They follow
the index's life: the store's own level changes update them, anything else drops them with it.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from loomctx._blas import limited
from loomctx.stores._int8_rows import Int8Rows
from loomctx.stores._sqlite_schema import index_version
from loomctx.stores.protocol import Level, MemoryRecord, Scope

_LEVEL_CODES = {"L1": 0, "L2": 1, "L3": 2, "L4": 3}
_JOIN = "FROM vectors v JOIN records r ON r.pk = v.pk"
_FETCH = 4096
_COLUMNS = ("tenant", "agent", "session")
INT8_FROM = 32_768
"""Rows from which a search that reads most of the index scores an int8 copy first
(:mod:`loomctx.stores._int8_rows`): exact all the same, ~3× faster at 100k rows; below this
the float32 product takes a few ms and the copy (its making, its memory) is not worth it."""
RECORDS_MAX = 50_000
"""Decoded records kept with the index; past this many they are all read again (bounded memory,
well above what one session's searches return between two changes of the data)."""


class VectorIndex:
    """Every stored vector as one matrix; ``data_version`` and ``index_version`` tell when it
    went stale.

    The store keeps it current through its own writes: new rows are appended (the buffers grow
    by doubling, so an append is amortised O(rows added)) and level changes are applied in
    place; only deletes, replacements and other connections' writes force a reload.
    Agent and session None are coded as ``""``, as the table stores them.
    """

    def __init__(self, dim: int, *, int8_from: int | None = None) -> None:
        self.pks: list[int] = []
        self.int8_from = INT8_FROM if int8_from is None else int8_from
        self._int8_rows: Int8Rows | None = None
        self._int8_lock = threading.Lock()  # searches run on several threads; one copy
        self._wide = 0  # searches that could have used the int8 copy
        self.data_version = -1
        self.index_version: str | None = None  # the file's count of writes it depends on
        self._dim = dim
        self._matrix = np.empty((0, dim), dtype=np.float32)
        self._codes: dict[str, dict[str, int]] = {c: {} for c in _COLUMNS}
        self._scope = np.empty((0, len(_COLUMNS)), dtype=np.int32)
        self._levels = np.empty(0, dtype=np.int8)
        self._rows: dict[int, int] | None = None
        self._records: dict[int, MemoryRecord] = {}
        # (tenant, agent, session, level) → the rows a search there scores (None: every row),
        # until the next append or level change: a session searches the same scope each build.
        self._in_scope: dict[tuple[str | None, ...], np.ndarray | None] = {}

    @property
    def dim(self) -> int | None:
        return self._dim if self.pks else None

    def _row_of(self) -> dict[int, int]:
        if self._rows is None:
            self._rows = {pk: n for n, pk in enumerate(self.pks)}
        return self._rows

    def contains_any(self, pks: list[int]) -> bool:
        rows = self._row_of()
        return any(pk in rows for pk in pks)

    def _code(self, column: str, value: str) -> int:
        codes = self._codes[column]
        return codes.setdefault(value, len(codes))

    def append(self, pks: list[int], vectors: np.ndarray,
               scopes: list[tuple[str, str, str]], levels: list[str]) -> None:
        """Add new rows (pks not yet indexed) in place; ``scopes`` as stored (None is "")."""
        n, k = len(self.pks), len(pks)
        if vectors.shape[1] != self._dim:
            if self.pks:
                raise ValueError("dimension mismatch")
            self._dim = vectors.shape[1]
            self._reserve(0)
        if n + k > self._matrix.shape[0]:
            self._reserve(max(1024, 2 * (n + k)))
        self._matrix[n:n + k] = vectors
        self._scope[n:n + k] = [
            [self._code(c, v) for c, v in zip(_COLUMNS, s, strict=True)] for s in scopes
        ]
        self._levels[n:n + k] = [_LEVEL_CODES[lv] for lv in levels]
        self.pks.extend(pks)
        self._in_scope.clear()
        if self._rows is not None:
            for j, pk in enumerate(pks, n):
                self._rows[pk] = j

    def _reserve(self, cap: int) -> None:
        """Grow (or first allocate) the buffers to ``cap`` rows, keeping the rows held.

        An index loaded from an empty store has width 0 until its first vectors come; its
        (empty) matrix is then of another width, so it is replaced, not copied."""
        n = len(self.pks)
        matrix = np.empty((cap, self._dim), dtype=np.float32)
        if n:
            matrix[:n] = self._matrix[:n]
        scope = np.empty((cap, len(_COLUMNS)), dtype=np.int32)
        scope[:n] = self._scope[:n]
        levels = np.empty(cap, dtype=np.int8)
        levels[:n] = self._levels[:n]
        self._matrix, self._scope, self._levels = matrix, scope, levels

    def set_level(self, pks: list[int], level: Level) -> None:
        rows = self._row_of()
        code = _LEVEL_CODES[level]
        records = self._records
        self._in_scope.clear()
        for pk in pks:
            r = rows.get(pk)
            if r is not None:
                self._levels[r] = code
            known = records.get(pk)
            if known is not None and known.level != level:
                records[pk] = replace(known, level=level)

    def records(self, pks: list[int],
                read: Callable[[list[int]], dict[int, MemoryRecord]]) -> dict[int, MemoryRecord]:
        """The records of ``pks`` (those that exist): kept ones as kept, the rest from ``read``
        (one query for all of them), kept from now on."""
        known = self._records
        missing = [pk for pk in pks if pk not in known]
        fresh = read(missing) if missing else {}
        if len(known) + len(fresh) > RECORDS_MAX:
            known.clear()
        known.update(fresh)
        return {pk: r for pk in pks if (r := known.get(pk) or fresh.get(pk)) is not None}

    @classmethod
    def load(cls, conn: sqlite3.Connection, data_version: int) -> VectorIndex:
        """Read all vectors in one snapshot, a few thousand rows at a time, into exact buffers."""
        conn.execute("BEGIN")
        try:
            n, dim = conn.execute(f"SELECT COUNT(*), MAX(v.dim) {_JOIN}").fetchone()
            index = cls(dim or 0)
            index.index_version = index_version(conn)  # in the same snapshot as the rows
            index._reserve(n)
            cursor = conn.execute(
                f"SELECT v.pk, v.vec, r.tenant, r.agent, r.session, r.level {_JOIN}"
            )
            while rows := cursor.fetchmany(_FETCH):
                flat = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
                index.append([r[0] for r in rows], flat.reshape(len(rows), -1),
                             [(r[2], r[3], r[4]) for r in rows], [r[5] for r in rows])
        finally:
            conn.execute("COMMIT")
        index.data_version = data_version
        return index

    def _mask(self, scope: Scope, level: str | None) -> np.ndarray | None:
        """Rows inside the scope (and of ``level``); None when no row can be."""
        n = len(self.pks)
        wanted = (scope.tenant, scope.agent, scope.session)
        mask: np.ndarray | None = None
        for col, (column, value) in enumerate(zip(_COLUMNS, wanted, strict=True)):
            if value is None:
                continue
            code = self._codes[column].get(value)
            if code is None:
                return None
            hit = self._scope[:n, col] == code
            mask = hit if mask is None else mask & hit
        if level is not None:
            hit = self._levels[:n] == _LEVEL_CODES[level]
            mask = hit if mask is None else mask & hit
        return mask

    def search(
        self, query: np.ndarray, limit: int, scope: Scope, level: str | None
    ) -> list[tuple[int, float]]:
        """Up to ``limit`` (pk, cosine) pairs among the scope's rows, unordered."""
        n = len(self.pks)
        key = (scope.tenant, scope.agent, scope.session, level)
        if key in self._in_scope:
            rows = self._in_scope[key]
        else:
            mask = self._mask(scope, level)
            rows = self._in_scope[key] = None if mask is not None and mask.all() else (
                np.empty(0, dtype=np.int64) if mask is None else np.flatnonzero(mask))
        count = n if rows is None else len(rows)
        k = min(limit, count)
        if k == 0:
            return []
        matrix = self._matrix[:n]
        # One BLAS thread: the product is bound by memory, not by cores, and OpenBLAS's second
        # thread spun for as long as it ran (100k rows: the same wall time at half the CPU).
        with limited(1):
            bounded = self._int8(n) if k < count and (rows is None or 4 * count >= n) else None
            # rows appended since the int8 copy: their exact scores
            maybe = None if bounded is None else bounded.in_play(
                query, k, tail=matrix[bounded.rows:] @ query, rows=rows)
            if maybe is not None:  # a wide scope of a large index: estimates, then the best
                exact = matrix[maybe] @ query
                best = np.argpartition(-exact, k - 1)[:k] if k < len(maybe) else \
                    np.arange(len(maybe))
                named, scores = maybe[best], exact[best]
            else:
                # A narrow scope scores only its rows; a wide one avoids copying the matrix.
                if rows is None:  # the scope holds every row: no index to apply
                    every = matrix @ query
                else:
                    every = matrix[rows] @ query if 4 * count < n else (matrix @ query)[rows]
                chosen = np.argpartition(-every, k - 1)[:k] if k < count else np.arange(count)
                scores = every[chosen]
                named = chosen if rows is None else rows[chosen]
        pks = self.pks
        return [(pks[r], s) for r, s in zip(named.tolist(), scores.tolist(), strict=True)]

    def _int8(self, n: int) -> Int8Rows | None:
        """The int8 copy of the first rows for a search of ``n`` rows: None below
        :attr:`int8_from` rows and for this index's first such search (making the copy costs
        a few dozen float32 searches); made again once the rows appended since it are a quarter
        of it."""
        if n < self.int8_from:
            return None
        self._wide += 1
        if self._wide < 2:  # a store whose index another writer keeps reloading never makes one
            return None
        with self._int8_lock:
            kept = self._int8_rows
            if kept is None or 4 * (n - kept.rows) >= kept.rows:
                kept = self._int8_rows = Int8Rows(self._matrix[:n])
            return kept


__all__ = ["VectorIndex"]
