"""The :class:`MemoryStore` contract: where remembered items live, and whose they are.

A store is synchronous and thread-safe; async callers run it in a worker thread. Every backend
(in-memory, SQLite, PostgreSQL + pgvector) passes the one conformance suite in
``loomctx.testing.store_conformance``.

Every record belongs to one :class:`Scope` — a tenant, optionally an agent of that tenant,
optionally a session of that agent — and every read or change names the scope it works in, so
one user's or one session's records never reach another (guarantee 8 of the design).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from loomctx.errors import ConfigError

Level = Literal["L1", "L2", "L3", "L4"]

DEFAULT_TENANT = "default"
"""The tenant of a single-user application, which never has to name one."""

_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def check_name(value: object, what: str, *, optional: bool) -> str | None:
    """A scope field: a non-empty str of valid Unicode (or None when ``optional``).

    Scope fields are identity, like ids: they are never rewritten (a lone surrogate is refused,
    not replaced), and ``""`` is refused because a backend may use it to store None.
    """
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value:
        allowed = "a non-empty str or None" if optional else "a non-empty str"
        raise ConfigError(f"{what} must be {allowed}, got {value!r}")
    if _SURROGATE_RE.search(value):
        raise ConfigError(f"{what} {value!r} contains lone surrogates; use valid Unicode")
    return value


@dataclass(frozen=True, kw_only=True)
class Scope:
    """Which records an operation may see: a tenant, narrowed to an agent, then to a session.

    The scopes nest: ``Scope(tenant=t)`` covers every record of tenant ``t`` (tenant-global
    records with no agent included); ``Scope(tenant=t, agent=a)`` covers every session of agent
    ``a`` and the agent's own records (session None, such as cross-session summaries);
    ``Scope(tenant=t, agent=a, session=s)`` covers that one session. A session belongs to one
    agent, so a session without an agent is refused: it would read the same session name across
    all agents of the tenant.
    """

    tenant: str = DEFAULT_TENANT
    """The namespace of one user or customer of a multi-user service."""
    agent: str | None = None
    """The agent within the tenant (None: the whole tenant)."""
    session: str | None = None
    """The session of that agent (None: every session of the agent, and its own records)."""

    def __post_init__(self) -> None:
        check_scope_fields(self.tenant, self.agent, self.session, "scope")

    @classmethod
    def of(cls, record: MemoryRecord) -> Scope:
        """The narrowest scope holding ``record``: exactly its tenant, agent and session."""
        return cls(tenant=record.tenant, agent=record.agent, session=record.session)

    def covers(self, record: MemoryRecord) -> bool:
        """True when an operation in this scope may read or change ``record``."""
        return (
            record.tenant == self.tenant
            and (self.agent is None or record.agent == self.agent)
            and (self.session is None or record.session == self.session)
        )


def check_scope_fields(tenant: object, agent: object, session: object, what: str) -> None:
    """Validate a (tenant, agent, session) triple of a scope or a record; names ``what``."""
    check_name(tenant, f"{what}: tenant", optional=False)
    check_name(agent, f"{what}: agent", optional=True)
    check_name(session, f"{what}: session", optional=True)
    if session is not None and agent is None:
        raise ConfigError(
            f"{what}: session {session!r} has no agent; a session belongs to one agent, "
            "so give agent= as well"
        )


@dataclass(frozen=True, kw_only=True)
class MemoryRecord:
    """One remembered item (a message, a fact, a summary)."""

    id: str
    """Caller-given id, unique within the record's scope (tenant, agent, session)."""
    content: str
    """The text."""
    level: Level = "L4"
    """The tier the record currently belongs to."""
    role: str | None = None
    """Chat role when the record is a message."""
    timestamp: float = 0.0
    """Epoch seconds when the content was created."""
    session: str | None = None
    """Owning session id (None for agent-level or tenant-global records); needs ``agent``."""
    agent: str | None = None
    """Owning agent id (None for a record of the whole tenant)."""
    tenant: str = DEFAULT_TENANT
    """Owning tenant: the namespace of one user of a multi-user service."""
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


@dataclass(frozen=True, slots=True)
class Hit:
    """A search result: the record and its score (higher is better)."""

    record: MemoryRecord
    score: float


@runtime_checkable
class MemoryStore(Protocol):
    """Persistent, searchable memory, partitioned by :class:`Scope`.

    Contract:
    - A record's identity is (tenant, agent, session, id). The same id in two scopes is two
      records; ``put`` of an existing identity replaces that record (an explicit update), never
      creates a duplicate. ``put`` stores each record in its own scope (its fields).
    - ``put`` is atomic per call: all records of the call are stored or none are.
    - Every other record operation takes a ``scope`` (keyword, required) and sees exactly the
      records :meth:`Scope.covers`: nothing outside it is read, returned, counted, moved or
      deleted. With a scope wider than one session, ``get``/``delete``/``set_level`` act on every
      covered record with a given id (at most one per tenant, agent and session).
    - ``vectors`` given with records are stored with them; ``search_vector`` ranks by cosine.
    - ``search_lexical`` is a full-text search that handles English and Chinese. Its scores may
      use term statistics of the whole store; the records it returns are the scope's only.
    - ``level`` filters are exact matches; None means any level.
    - ``scan`` orders by (timestamp, seq, id), ties broken by (agent, session) with None first;
      ``get`` keeps the order of the ids asked, the records of one id ordered the same way.
    - Nothing is deleted except by an explicit ``delete``.
    - ``cached_vectors`` / ``cache_vectors`` persist embeddings by model and content hash so the
      same text is never embedded twice, also across restarts of a persistent store. The cache is
      partitioned by tenant: one tenant cannot learn which texts another has embedded.
    """

    def put(
        self, records: Sequence[MemoryRecord], vectors: np.ndarray | None = None
    ) -> None: ...

    def get(self, ids: Iterable[str], *, scope: Scope) -> list[MemoryRecord]: ...

    def delete(self, ids: Iterable[str], *, scope: Scope) -> int: ...

    def set_level(self, ids: Iterable[str], level: Level, *, scope: Scope) -> None: ...

    def scan(self, *, scope: Scope, level: Level | None = None) -> Iterator[MemoryRecord]: ...

    def count(self, *, scope: Scope, level: Level | None = None) -> int: ...

    def search_lexical(
        self, query: str, *, scope: Scope, limit: int = 20, level: Level | None = None
    ) -> list[Hit]: ...

    def search_vector(
        self, vector: np.ndarray, *, scope: Scope, limit: int = 20, level: Level | None = None
    ) -> list[Hit]: ...

    def cached_vectors(
        self, model: str, hashes: Sequence[str], *, tenant: str
    ) -> dict[str, np.ndarray]: ...

    def cache_vectors(
        self, model: str, vectors: Mapping[str, np.ndarray], *, tenant: str
    ) -> None: ...

    def close(self) -> None: ...


__all__ = [
    "DEFAULT_TENANT",
    "Hit",
    "Level",
    "MemoryRecord",
    "MemoryStore",
    "Scope",
    "check_name",
    "check_scope_fields",
]
