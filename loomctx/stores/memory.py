""":class:`InMemoryStore`: the reference backend, plain dicts plus numpy.

It exists for tests, short-lived agents and as the executable reading of the
:class:`~loomctx.stores.protocol.MemoryStore` contract: lexical search is a textbook BM25 over
:func:`loomctx.stores._text.tokenize` tokens, vector search a cosine over a matrix rebuilt lazily
after writes. Nothing survives the process, except what the caller copies elsewhere.
"""

from __future__ import annotations

import copy
import math
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace

import numpy as np

from loomctx.errors import StoreError
from loomctx.stores import _records as rec
from loomctx.stores._text import query_tokens, tokenize
from loomctx.stores.protocol import Hit, Level, MemoryRecord

_K1 = 1.2
_B = 0.75


class InMemoryStore:
    """A thread-safe :class:`~loomctx.stores.protocol.MemoryStore` held in process memory."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._closed = False
        self._records: dict[str, MemoryRecord] = {}
        self._postings: dict[str, dict[str, int]] = {}
        self._terms: dict[str, list[str]] = {}
        self._lengths: dict[str, int] = {}
        self._total_length = 0
        self._vectors: dict[str, np.ndarray] = {}
        self._matrix: tuple[list[str], np.ndarray] | None = None
        self._embed_cache: dict[tuple[str, str], np.ndarray] = {}

    # -- writes -------------------------------------------------------------------------------

    def put(self, records: Sequence[MemoryRecord], vectors: np.ndarray | None = None) -> None:
        """Store (or replace) ``records`` and their ``vectors``; all or nothing."""
        with self._lock:
            self._check_open()
            cleaned, rows = rec.prepare_put(records, vectors, self._dim())
            # Validation is over: nothing below can fail half-way.
            for i, record in enumerate(cleaned):
                self._remove(record.id)
                self._records[record.id] = record
                counts = Counter(tokenize(record.content))
                self._terms[record.id] = list(counts)
                for term, tf in counts.items():
                    self._postings.setdefault(term, {})[record.id] = tf
                length = sum(counts.values())
                self._lengths[record.id] = length
                self._total_length += length
                if rows is not None:
                    self._vectors[record.id] = rows[i]
            self._matrix = None

    def delete(self, ids: Iterable[str]) -> int:
        """Delete the records with these ids (and their vectors); return how many existed."""
        with self._lock:
            self._check_open()
            removed = sum(self._remove(i) for i in rec.id_list(ids))
            self._matrix = None
            return removed

    def set_level(self, ids: Iterable[str], level: Level) -> None:
        """Move existing records to ``level``; unknown ids are ignored."""
        rec.check_level(level)
        with self._lock:
            self._check_open()
            for record_id in rec.id_list(ids):
                if record_id in self._records:
                    self._records[record_id] = replace(self._records[record_id], level=level)

    def _remove(self, record_id: str) -> bool:
        if self._records.pop(record_id, None) is None:
            return False
        for term in self._terms.pop(record_id):
            posting = self._postings[term]
            del posting[record_id]
            if not posting:
                del self._postings[term]
        self._total_length -= self._lengths.pop(record_id)
        self._vectors.pop(record_id, None)
        return True

    # -- reads --------------------------------------------------------------------------------

    def get(self, ids: Iterable[str]) -> list[MemoryRecord]:
        """The stored records for ``ids``, in the order asked, missing ids skipped."""
        with self._lock:
            self._check_open()
            return [_copy(self._records[i]) for i in rec.id_list(ids) if i in self._records]

    def scan(
        self, *, session: str | None = None, level: Level | None = None, agent: str | None = None
    ) -> Iterator[MemoryRecord]:
        """Matching records ordered by (timestamp, seq, id)."""
        rec.check_level(level, optional=True)
        with self._lock:
            self._check_open()
            found = [r for r in self._records.values() if _matches(r, session, level, agent)]
        found.sort(key=lambda r: (r.timestamp, r.seq, r.id))
        return iter([_copy(r) for r in found])

    def count(self, *, session: str | None = None, level: Level | None = None) -> int:
        rec.check_level(level, optional=True)
        with self._lock:
            self._check_open()
            return sum(_matches(r, session, level, None) for r in self._records.values())

    def search_lexical(
        self, query: str, *, limit: int = 20, session: str | None = None,
        level: Level | None = None,
    ) -> list[Hit]:
        """BM25 (k1=1.2, b=0.75) over query tokens; records sharing no token are not returned."""
        rec.check_limit(limit)
        rec.check_level(level, optional=True)
        terms = set(query_tokens(rec.check_query(query)))
        with self._lock:
            self._check_open()
            n = len(self._records)
            if not n or not terms or not limit:
                return []
            avg = max(self._total_length / n, 1e-9)
            scores: dict[str, float] = {}
            for term in terms:
                posting = self._postings.get(term, {})
                idf = math.log(1.0 + (n - len(posting) + 0.5) / (len(posting) + 0.5))
                for record_id, tf in posting.items():
                    norm = tf + _K1 * (1 - _B + _B * self._lengths[record_id] / avg)
                    scores[record_id] = scores.get(record_id, 0.0) + idf * tf * (_K1 + 1) / norm
            best = rec.top(
                ((i, s) for i, s in scores.items() if self._passes(i, session, level)), limit
            )
            return [Hit(_copy(self._records[i]), s) for i, s in best]

    def search_vector(
        self, vector: np.ndarray, *, limit: int = 20, session: str | None = None,
        level: Level | None = None,
    ) -> list[Hit]:
        """Cosine similarity against every stored vector that passes the filters."""
        rec.check_limit(limit)
        rec.check_level(level, optional=True)
        with self._lock:
            self._check_open()
            query = rec.query_vector(vector, self._dim())
            if not self._vectors or not limit:
                return []
            if self._matrix is None:
                ids = list(self._vectors)
                self._matrix = (ids, np.stack([self._vectors[i] for i in ids]))
            ids, matrix = self._matrix
            scores = (matrix @ query).tolist()
            pairs = zip(ids, scores, strict=True)
            best = rec.top(((i, s) for i, s in pairs if self._passes(i, session, level)), limit)
            return [Hit(_copy(self._records[i]), s) for i, s in best]

    def _passes(self, record_id: str, session: str | None, level: str | None) -> bool:
        return _matches(self._records[record_id], session, level, None)

    def _dim(self) -> int | None:
        for vector in self._vectors.values():
            return int(vector.shape[0])
        return None

    # -- embedding cache ------------------------------------------------------------------------

    def cached_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached embeddings of ``model`` for the given content hashes that exist."""
        rec.check_model(model)
        with self._lock:
            self._check_open()
            return {
                h: self._embed_cache[(model, h)].copy()
                for h in hashes
                if (model, h) in self._embed_cache
            }

    def cache_vectors(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        """Remember embeddings of ``model`` by content hash (replacing older entries)."""
        rec.check_model(model)
        rows = rec.cache_rows(vectors)
        with self._lock:
            self._check_open()
            for key, row in rows.items():
                self._embed_cache[(model, key)] = row

    def close(self) -> None:
        """Drop everything; later calls raise :class:`~loomctx.errors.StoreError`."""
        with self._lock:
            self._closed = True
            self._records.clear()
            self._postings.clear()
            self._terms.clear()
            self._vectors.clear()
            self._embed_cache.clear()
            self._matrix = None

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("this InMemoryStore is closed; create a new one")

    def __enter__(self) -> InMemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _matches(
    record: MemoryRecord, session: str | None, level: str | None, agent: str | None
) -> bool:
    return (
        (session is None or record.session == session)
        and (level is None or record.level == level)
        and (agent is None or record.agent == agent)
    )


def _copy(record: MemoryRecord) -> MemoryRecord:
    """A record whose dicts the caller may change without touching the store."""
    return copy.deepcopy(record)


__all__ = ["InMemoryStore"]
