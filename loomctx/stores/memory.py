""":class:`InMemoryStore`: the reference backend, plain dicts plus numpy.

It exists for tests, short-lived agents and as the executable reading of the
:class:`~loomctx.stores.protocol.MemoryStore` contract: records are keyed by their identity (tenant,
agent, session, id), every read keeps only what its :class:`Scope` covers, lexical search is the
library's BM25 (:func:`~loomctx.text.lexical.bm25_idf`, ``bm25_norm``, ``bm25_weight``) over keyed
postings of :func:`loomctx.stores._text.tokenize` tokens, vector search a cosine over a matrix
rebuilt lazily after writes. Nothing survives the process, except what the caller copies elsewhere.
"""

from __future__ import annotations

import copy
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from loomctx.errors import StoreError
from loomctx.stores import _records as rec
from loomctx.stores._records import Key
from loomctx.stores._text import query_tokens, tokenize
from loomctx.stores.protocol import Hit, Level, MemoryRecord, Scope
from loomctx.text.lexical import BM25_K1 as _K1
from loomctx.text.lexical import bm25_idf, bm25_norm, bm25_weight


class InMemoryStore:
    """A thread-safe :class:`~loomctx.stores.protocol.MemoryStore` held in process memory."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._closed = False
        self._records: dict[Key, MemoryRecord] = {}
        self._by_id: dict[str, set[Key]] = {}
        self._postings: dict[str, dict[Key, int]] = {}
        self._terms: dict[Key, list[str]] = {}
        self._lengths: dict[Key, int] = {}
        self._total_length = 0
        self._vectors: dict[Key, np.ndarray] = {}
        self._matrix: tuple[list[Key], np.ndarray] | None = None
        self._spare: np.ndarray | None = None
        """The buffer ``_matrix``'s array is the head of, with room for the next vectors."""
        self._embed_cache: dict[tuple[str, str, str], np.ndarray] = {}

    # -- writes -------------------------------------------------------------------------------

    def put(self, records: Sequence[MemoryRecord], vectors: np.ndarray | None = None) -> None:
        """Store (or replace) ``records`` in their own scopes, with their ``vectors``."""
        with self._lock:
            self._check_open()
            cleaned, rows = rec.prepare_put(records, vectors, self._dim())
            # Validation is over: nothing below can fail half-way.
            appended = self._matrix is not None  # only new keys: the matrix grows in place
            added: list[Key] = []
            for i, record in enumerate(cleaned):
                key = rec.key(record)
                if self._remove(key):
                    appended = False
                self._records[key] = record
                self._by_id.setdefault(record.id, set()).add(key)
                counts = Counter(tokenize(record.content))
                self._terms[key] = list(counts)
                for term, tf in counts.items():
                    self._postings.setdefault(term, {})[key] = tf
                length = sum(counts.values())
                self._lengths[key] = length
                self._total_length += length
                if rows is not None:
                    self._vectors[key] = rows[i]
                    added.append(key)
            if not appended:
                self._matrix = None
            elif added:
                self._grow(added)

    def _grow(self, added: list[Key]) -> None:
        """Append the vectors of ``added`` (new keys, the last of ``_vectors``) to the search
        matrix, in a buffer with room to spare: a turn's few messages cost their own rows,
        not a copy of every stored vector. The matrix is the one a rebuild would make."""
        if self._matrix is None:
            return
        keys, matrix = self._matrix
        rows = np.stack([self._vectors[k] for k in added])
        n, k = len(keys), len(added)
        spare = self._spare
        if spare is None or matrix.base is not spare or n + k > spare.shape[0] \
                or spare.dtype != np.result_type(matrix, rows) or spare.shape[1:] != rows.shape[1:]:
            spare = np.empty((max(64, 2 * (n + k)), *rows.shape[1:]),
                             dtype=np.result_type(matrix, rows))
            spare[:n] = matrix
            self._spare = spare
        spare[n:n + k] = rows
        self._matrix = ([*keys, *added], spare[:n + k])

    @property
    def dims(self) -> int | None:
        """The vector dimension of the stored embeddings (None while none are stored)."""
        with self._lock:
            return self._dim()

    def reembed(self, embed: rec.Embed) -> int:
        """Give every record that has a vector ``embed``'s vector of its content instead: all
        are replaced or, on any error, none. The store's dimension becomes the new vectors';
        records stored without a vector stay without. Returns how many changed."""
        with self._lock:
            self._check_open()
            keys = list(self._vectors)
            vectors = rec.new_vectors(embed, [self._records[k].content for k in keys])
            self._vectors = dict(zip(keys, vectors, strict=True))
            self._matrix = None
            return len(keys)

    def delete(self, ids: Iterable[str], *, scope: Scope) -> int:
        """Delete the scope's records with these ids (and their vectors); return how many."""
        rec.check_scope(scope)
        with self._lock:
            self._check_open()
            removed = sum(self._remove(k) for k in self._keys(rec.id_list(ids), scope))
            self._matrix = None
            return removed

    def set_level(self, ids: Iterable[str], level: Level, *, scope: Scope) -> None:
        """Move the scope's records with these ids to ``level``; unknown ids are ignored."""
        rec.check_level(level)
        rec.check_scope(scope)
        with self._lock:
            self._check_open()
            for key in self._keys(rec.id_list(ids), scope):
                self._records[key] = replace(self._records[key], level=level)

    def _keys(self, ids: list[str], scope: Scope) -> list[Key]:
        """The stored keys with these ids inside ``scope``: by asked id, then in scan order."""
        out: list[Key] = []
        for record_id in ids:
            found = [self._records[k] for k in self._by_id.get(record_id, ())]
            out += [rec.key(r) for r in sorted(found, key=rec.order_key) if scope.covers(r)]
        return out

    def _remove(self, key: Key) -> bool:
        if self._records.pop(key, None) is None:
            return False
        same_id = self._by_id[key[3]]
        same_id.discard(key)
        if not same_id:
            del self._by_id[key[3]]
        for term in self._terms.pop(key):
            posting = self._postings[term]
            del posting[key]
            if not posting:
                del self._postings[term]
        self._total_length -= self._lengths.pop(key)
        self._vectors.pop(key, None)
        return True

    # -- reads --------------------------------------------------------------------------------

    def get(self, ids: Iterable[str], *, scope: Scope) -> list[MemoryRecord]:
        """The scope's records with ``ids``, in the order asked, missing ids skipped."""
        rec.check_scope(scope)
        with self._lock:
            self._check_open()
            return [_copy(self._records[k]) for k in self._keys(rec.id_list(ids), scope)]

    def scan(self, *, scope: Scope, level: Level | None = None) -> Iterator[MemoryRecord]:
        """The scope's records (of ``level``) ordered by (timestamp, seq, id, agent, session)."""
        rec.check_scope(scope)
        rec.check_level(level, optional=True)
        with self._lock:
            self._check_open()
            found = [r for r in self._records.values() if _matches(r, scope, level)]
        found.sort(key=rec.order_key)
        return iter([_copy(r) for r in found])

    def count(self, *, scope: Scope, level: Level | None = None) -> int:
        rec.check_scope(scope)
        rec.check_level(level, optional=True)
        with self._lock:
            self._check_open()
            return sum(_matches(r, scope, level) for r in self._records.values())

    def search_lexical(
        self, query: str, *, scope: Scope, limit: int = 20, level: Level | None = None
    ) -> list[Hit]:
        """BM25 (k1=1.2, b=0.75) over query tokens; records sharing no token are not returned.

        Term statistics are the whole store's (as in the SQLite backend); hits are the scope's.
        """
        rec.check_scope(scope)
        rec.check_limit(limit)
        rec.check_level(level, optional=True)
        terms = set(query_tokens(rec.check_query(query)))
        with self._lock:
            self._check_open()
            n = len(self._records)
            if not n or not terms or not limit:
                return []
            avg = max(self._total_length / n, 1e-9)
            scores: dict[Key, float] = {}
            for term in terms:
                posting = self._postings.get(term, {})
                idf = bm25_idf(n, len(posting))
                for key, tf in posting.items():
                    norm = bm25_norm(self._lengths[key], avg)
                    scores[key] = scores.get(key, 0.0) + bm25_weight(idf, tf, norm, _K1 + 1)
            return self._best(scores.items(), scope, level, limit)

    def search_vector(
        self, vector: np.ndarray, *, scope: Scope, limit: int = 20, level: Level | None = None
    ) -> list[Hit]:
        """Cosine similarity against every stored vector of the scope (and ``level``)."""
        rec.check_scope(scope)
        rec.check_limit(limit)
        rec.check_level(level, optional=True)
        with self._lock:
            self._check_open()
            query = rec.query_vector(vector, self._dim())
            if not self._vectors or not limit:
                return []
            if self._matrix is None:
                keys = list(self._vectors)
                self._matrix = (keys, np.stack([self._vectors[k] for k in keys]))
            keys, matrix = self._matrix
            scores = matrix @ query
            # Best score first, stopping once no record left can enter the top ``limit``: only
            # those are checked against the scope and compared by id (ties are all kept).
            values = scores.tolist()
            passing: list[tuple[MemoryRecord, float]] = []
            for i in np.argsort(-scores, kind="stable").tolist():
                if len(passing) >= limit and values[i] < passing[limit - 1][1]:
                    break
                record = self._records[keys[i]]
                if _matches(record, scope, level):
                    passing.append((record, values[i]))
            return [Hit(_copy(h.record), h.score) for h in rec.top(passing, limit)]

    def _best(
        self, scored: Iterable[tuple[Key, float]], scope: Scope, level: Level | None, limit: int
    ) -> list[Hit]:
        """The ``limit`` best in-scope hits (copies), best first."""
        records = self._records
        passing = ((records[k], s) for k, s in scored if _matches(records[k], scope, level))
        return [Hit(_copy(h.record), h.score) for h in rec.top(passing, limit)]

    def _dim(self) -> int | None:
        for vector in self._vectors.values():
            return int(vector.shape[0])
        return None

    # -- embedding cache ------------------------------------------------------------------------

    def cached_vectors(
        self, model: str, hashes: Sequence[str], *, tenant: str
    ) -> dict[str, np.ndarray]:
        """The tenant's cached embeddings of ``model`` for the given content hashes."""
        rec.check_model(model)
        rec.check_tenant(tenant)
        with self._lock:
            self._check_open()
            cache = self._embed_cache
            return {
                h: cache[(tenant, model, h)].copy() for h in hashes if (tenant, model, h) in cache
            }

    def cache_vectors(
        self, model: str, vectors: Mapping[str, np.ndarray], *, tenant: str
    ) -> None:
        """Remember the tenant's embeddings of ``model`` by content hash (replacing older ones)."""
        rec.check_model(model)
        rec.check_tenant(tenant)
        rows = rec.cache_rows(vectors)
        with self._lock:
            self._check_open()
            for key, row in rows.items():
                self._embed_cache[(tenant, model, key)] = row

    def close(self) -> None:
        """Drop everything; later calls raise :class:`~loomctx.errors.StoreError`."""
        with self._lock:
            self._closed = True
            self._records.clear()
            self._by_id.clear()
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


def _matches(record: MemoryRecord, scope: Scope, level: str | None) -> bool:
    return scope.covers(record) and (level is None or record.level == level)


def _copy(record: MemoryRecord) -> MemoryRecord:
    """A record whose dicts the caller may change without touching the store (its other
    fields are immutable)."""
    out = object.__new__(MemoryRecord)  # the fields as they are, without __init__'s cost
    out.__dict__.update(record.__dict__, metadata=_copy_data(record.metadata),
                        message=None if record.message is None else _copy_data(record.message))
    return out


def _copy_data(value: Any) -> Any:
    """A deep copy of JSON-like data (dicts, lists, scalars) without ``copy.deepcopy``'s
    bookkeeping; anything else is deep-copied."""
    if isinstance(value, dict):
        return {k: _copy_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_data(v) for v in value]
    if value is None or isinstance(value, (str, int, float)):  # bool is an int
        return value
    return copy.deepcopy(value)


__all__ = ["InMemoryStore"]
