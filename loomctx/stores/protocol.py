"""The :class:`MemoryStore` contract: where remembered items live.

A store is synchronous and thread-safe; async callers run it in a worker thread. Every backend
(in-memory, SQLite, later PostgreSQL + pgvector) passes the one conformance suite in
``loomctx.testing.store_conformance``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

Level = Literal["L1", "L2", "L3", "L4"]


@dataclass(frozen=True, kw_only=True)
class MemoryRecord:
    """One remembered item (a message, a fact, a summary)."""

    id: str
    """Caller-given id, unique within the store."""
    content: str
    """The text."""
    level: Level = "L4"
    """The tier the record currently belongs to."""
    role: str | None = None
    """Chat role when the record is a message."""
    timestamp: float = 0.0
    """Epoch seconds when the content was created."""
    session: str | None = None
    """Owning session id (None for agent-level or global records)."""
    agent: str | None = None
    """Owning agent id."""
    importance: float = 0.0
    """0..1, decides L2 promotion."""
    group: str | None = None
    """Atomic group (a tool call and its results)."""
    seq: int = 0
    """Insertion order within the session (chronology when timestamps tie)."""
    message: Mapping[str, Any] | None = None
    """The original provider message (tool calls etc.), JSON-serialisable."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """JSON-serialisable extra data."""


@dataclass(frozen=True)
class Hit:
    """A search result: the record and its score (higher is better)."""

    record: MemoryRecord
    score: float


@runtime_checkable
class MemoryStore(Protocol):
    """Persistent, searchable memory.

    Contract:
    - ``put`` is atomic per call: all records of the call are stored or none are. Putting an
      existing id replaces the record (an explicit update), never creates a duplicate.
    - ``vectors`` given with records are stored with them; ``search_vector`` ranks by cosine.
    - ``search_lexical`` is a full-text search that handles English and Chinese.
    - Filters (``session``, ``level``, ``agent``) are exact matches; None means any.
    - Nothing is deleted except by an explicit ``delete``.
    - ``cached_vectors`` / ``cache_vectors`` persist embeddings by content hash so the same text
      is never embedded twice, also across restarts of a persistent store.
    """

    def put(
        self, records: Sequence[MemoryRecord], vectors: np.ndarray | None = None
    ) -> None: ...

    def get(self, ids: Iterable[str]) -> list[MemoryRecord]: ...

    def delete(self, ids: Iterable[str]) -> int: ...

    def set_level(self, ids: Iterable[str], level: Level) -> None: ...

    def scan(
        self, *, session: str | None = None, level: Level | None = None, agent: str | None = None
    ) -> Iterator[MemoryRecord]: ...

    def count(self, *, session: str | None = None, level: Level | None = None) -> int: ...

    def search_lexical(
        self, query: str, *, limit: int = 20, session: str | None = None,
        level: Level | None = None,
    ) -> list[Hit]: ...

    def search_vector(
        self, vector: np.ndarray, *, limit: int = 20, session: str | None = None,
        level: Level | None = None,
    ) -> list[Hit]: ...

    def cached_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]: ...

    def cache_vectors(self, model: str, vectors: Mapping[str, np.ndarray]) -> None: ...

    def close(self) -> None: ...


__all__ = ["Hit", "Level", "MemoryRecord", "MemoryStore"]
