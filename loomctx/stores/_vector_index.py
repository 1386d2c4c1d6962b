"""An in-memory cosine index over the SQLite store's vectors, rebuilt after writes.

Reading 100k blobs back from SQLite takes about a second; a matrix product over them takes tens
of milliseconds. So the store loads every vector once into one float32 matrix, with the filter
columns (session, level) as small integer codes, and searches that until the data changes.
"""

from __future__ import annotations

import sqlite3

import numpy as np

_LEVEL_CODES = {"L1": 0, "L2": 1, "L3": 2, "L4": 3}
_JOIN = "FROM vectors v JOIN records r ON r.id = v.id"
_FETCH = 4096


class VectorIndex:
    """Every stored vector as one matrix; ``data_version`` tells when it went stale.

    The store keeps it current through its own writes: new rows are appended (the buffers grow
    by doubling, so an append is amortised O(rows added)) and level changes are applied in
    place; only deletes, replacements and other connections' writes force a reload.
    """

    def __init__(self, ids: list[str], matrix: np.ndarray, sessions: np.ndarray,
                 session_codes: dict[str | None, int], levels: np.ndarray,
                 data_version: int) -> None:
        self.ids = ids
        self._matrix = matrix
        self._sessions = sessions
        self.session_codes = session_codes
        self._levels = levels
        self.data_version = data_version
        self._rows: dict[str, int] | None = None

    @property
    def matrix(self) -> np.ndarray:
        return self._matrix[: len(self.ids)]

    @property
    def sessions(self) -> np.ndarray:
        return self._sessions[: len(self.ids)]

    @property
    def levels(self) -> np.ndarray:
        return self._levels[: len(self.ids)]

    @property
    def dim(self) -> int | None:
        return int(self._matrix.shape[1]) if self.ids else None

    def _row_of(self) -> dict[str, int]:
        if self._rows is None:
            self._rows = {i: n for n, i in enumerate(self.ids)}
        return self._rows

    def contains_any(self, ids: list[str]) -> bool:
        rows = self._row_of()
        return any(i in rows for i in ids)

    def append(self, ids: list[str], vectors: np.ndarray, sessions: list[str | None],
               levels: list[str]) -> None:
        """Add new rows (ids not yet indexed) in place."""
        n, k = len(self.ids), len(ids)
        if self.ids and vectors.shape[1] != self._matrix.shape[1]:
            raise ValueError("dimension mismatch")
        if n + k > self._matrix.shape[0] or not self.ids:
            cap = max(1024, 2 * (n + k))
            dim = vectors.shape[1]
            matrix = np.empty((cap, dim), dtype=np.float32)
            matrix[:n] = self._matrix[:n]
            sess = np.empty(cap, dtype=np.int32)
            sess[:n] = self._sessions[:n]
            lev = np.empty(cap, dtype=np.int8)
            lev[:n] = self._levels[:n]
            self._matrix, self._sessions, self._levels = matrix, sess, lev
        self._matrix[n:n + k] = vectors
        self._sessions[n:n + k] = [self.session_codes.setdefault(s, len(self.session_codes))
                                   for s in sessions]
        self._levels[n:n + k] = [_LEVEL_CODES[lv] for lv in levels]
        self.ids.extend(ids)
        if self._rows is not None:
            for j, i in enumerate(ids, n):
                self._rows[i] = j

    def set_level(self, ids: list[str], level: str) -> None:
        rows = self._row_of()
        code = _LEVEL_CODES[level]
        for i in ids:
            r = rows.get(i)
            if r is not None:
                self._levels[r] = code

    @classmethod
    def load(cls, conn: sqlite3.Connection, data_version: int) -> VectorIndex:
        """Read all vectors in one snapshot, a few thousand rows at a time (no second copy)."""
        conn.execute("BEGIN")
        try:
            n, dim = conn.execute(f"SELECT COUNT(*), MAX(v.dim) {_JOIN}").fetchone()
            matrix = np.empty((n, dim or 0), dtype=np.float32)
            sessions = np.empty(n, dtype=np.int32)
            levels = np.empty(n, dtype=np.int8)
            ids: list[str] = []
            codes: dict[str | None, int] = {}
            cursor = conn.execute(f"SELECT v.id, v.vec, r.session, r.level {_JOIN}")
            done = 0
            while rows := cursor.fetchmany(_FETCH):
                end = done + len(rows)
                flat = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
                matrix[done:end] = flat.reshape(len(rows), -1)
                sessions[done:end] = [codes.setdefault(r[2], len(codes)) for r in rows]
                levels[done:end] = [_LEVEL_CODES[r[3]] for r in rows]
                ids.extend(r[0] for r in rows)
                done = end
        finally:
            conn.execute("COMMIT")
        return cls(ids, matrix, sessions, codes, levels, data_version)

    def search(
        self, query: np.ndarray, limit: int, session: str | None, level: str | None
    ) -> list[tuple[str, float]]:
        """Up to ``limit`` (id, cosine) pairs among the rows that pass the filters, unordered."""
        mask = np.ones(len(self.ids), dtype=bool)
        if session is not None:
            mask &= self.sessions == self.session_codes.get(session, -1)
        if level is not None:
            mask &= self.levels == _LEVEL_CODES[level]
        rows = np.flatnonzero(mask)
        if 4 * len(rows) < len(self.ids):  # a narrow filter: score only its rows
            scores = self.matrix[rows] @ query
        else:
            scores = (self.matrix @ query)[rows]
        k = min(limit, len(rows))
        if k == 0:
            return []
        chosen = np.argpartition(-scores, k - 1)[:k] if k < len(rows) else range(len(rows))
        return [(self.ids[rows[j]], float(scores[j])) for j in chosen]


__all__ = ["VectorIndex"]
