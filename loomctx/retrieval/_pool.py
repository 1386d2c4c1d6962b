"""A small set of records read from the store now and then and ranked in process.

The agent's memory from its other sessions (L3 summaries and facts, their L4 copies, the shared
L2 pool) is a few records next to a session's thousands of messages. Reading them is a store
scan by level, which a large in-memory store pays in full (~60 ms over 100k records), so a
:class:`RecordPool` reads them at most once per ``refresh`` seconds (monotonic time) and ranks
them here: BM25 and embedding similarity, fused by reciprocal rank.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

import numpy as np

from loomctx.embed.protocol import Embedder
from loomctx.errors import ConfigError
from loomctx.stores.protocol import MemoryRecord
from loomctx.text.decoration import index_text
from loomctx.text.lexical import BM25Index

RRF_K = 60
"""Reciprocal-rank-fusion constant for merging the lexical and dense lists."""
REFRESH = 30.0
"""Seconds a read of the store is reused: what other sessions write shows up within it."""
MIN_SIMILARITY = 0.5
"""Cosine a record that shares no word with the question needs to be recalled. The builder
normalises relevance within each source, so the best of a few unrelated summaries would
otherwise score like the best evidence of the session's own retrieval."""


def check_refresh(refresh: float) -> float:
    if isinstance(refresh, bool) or not isinstance(refresh, int | float) or not refresh >= 0:
        raise ConfigError(f"refresh must be a number of seconds >= 0, got {refresh!r}")
    return float(refresh)


class RecordPool:
    """Records from ``load``, reloaded when older than ``refresh`` seconds, ranked on demand."""

    def __init__(self, load: Callable[[], list[MemoryRecord]], embedder: Embedder, *,
                 refresh: float = REFRESH, timer: Callable[[], float] = time.monotonic,
                 min_similarity: float = MIN_SIMILARITY) -> None:
        self.load = load
        self.min_similarity = min_similarity
        """Cosine a record without a word of the question needs (:data:`MIN_SIMILARITY`)."""
        self.embedder = embedder
        self.refresh = check_refresh(refresh)
        self.timer = timer
        self._lock = threading.Lock()
        self._at: float | None = None
        self._records: list[MemoryRecord] = []
        self._index: BM25Index | None = None
        self._vectors: np.ndarray | None = None

    def records(self) -> list[MemoryRecord]:
        """The records, read again when the last read is older than ``refresh``."""
        with self._lock:
            now = self.timer()
            if self._at is None or now - self._at >= self.refresh:
                self._records = self.load()
                self._index = self._vectors = None
                self._at = now
            return self._records

    def fresh_and_empty(self) -> bool:
        """True when the last read is still fresh and found nothing: a build can skip the
        pool without a hand-off to a worker thread."""
        with self._lock:
            return (self._at is not None and not self._records
                    and self.timer() - self._at < self.refresh)

    def invalidate(self) -> None:
        """Read the store again at the next use."""
        with self._lock:
            self._at = None

    def rank(self, query: str, limit: int) -> list[tuple[MemoryRecord, float]]:
        """The records for ``query``, best first, with their fused score (no query: none)."""
        return [(r, fused) for r, fused, _ in self.ranked(query, limit)]

    def ranked(self, query: str, limit: int) -> list[tuple[MemoryRecord, float, float]]:
        """:meth:`rank` with each record's cosine similarity to ``query`` as well (what a
        ``min_score`` floor reads, :mod:`loomctx.sources.floors`)."""
        records = self.records()
        if not records or not query.strip() or limit < 1:
            return []
        with self._lock:
            if self._index is None or self._vectors is None:
                texts = [index_text(r.content) for r in records]
                index = BM25Index()
                index.add(texts)
                self._index, self._vectors = index, self.embedder.embed(texts)
            index, vectors = self._index, self._vectors
        lexical = [i for i, score in index.search(query, limit) if score > 0]
        sims = vectors @ self.embedder.embed([query])[0]
        dense = sorted(range(len(records)), key=lambda i: (-float(sims[i]), i))[:limit]
        words = set(lexical)
        dense = [i for i in dense if i in words or float(sims[i]) >= self.min_similarity]
        fused = fuse_indices((lexical, dense))[:limit]
        return [(records[i], score, float(sims[i])) for i, score in fused]


def fuse(records: Sequence[MemoryRecord], lists: Sequence[Sequence[int]],
         ) -> list[tuple[MemoryRecord, float]]:
    """Reciprocal-rank fusion of ranked index lists; ties keep the lower index."""
    return [(records[i], score) for i, score in fuse_indices(lists)]


def fuse_indices(lists: Sequence[Sequence[int]]) -> list[tuple[int, float]]:
    """:func:`fuse` as (index, fused score) pairs, best first."""
    fused: dict[int, float] = {}
    for ranked in lists:
        for rank, i in enumerate(ranked):
            fused[i] = fused.get(i, 0.0) + 1.0 / (RRF_K + rank + 1)
    return [(i, fused[i]) for i in sorted(fused, key=lambda i: (-fused[i], i))]


__all__ = ["MIN_SIMILARITY", "REFRESH", "RRF_K", "RecordPool", "check_refresh", "fuse",
           "fuse_indices"]
