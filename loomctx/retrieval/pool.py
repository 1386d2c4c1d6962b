"""The shared pool: what several agents of one tenant write for each other to read.

Agents of one system exchange context beside their own memories: one writes what the others should
know, each reads it as a source of its builds. This is that pool. It differs from the shared L2 pool
(:mod:`loomctx.retrieval.shared`), which shows one agent's sessions each other's important memories
and is filled implicitly: here any agent of the tenant writes an entry explicitly
(:meth:`SharedPool.write`, naming itself as ``by``) and any agent of the tenant reads the pool
through a :class:`SharedPoolSource` in its builds.

Scope: the entries of pool ``name`` are stored in the tenant under the reserved agent id
``shared-pool:<name>`` (level L4, session None), so reading a pool is one scan of its own
records, an agent's own memory (``Scope(tenant, agent)``) never includes them by accident, and
another tenant's pool of the same name is a different set of records in the same store. Entries
stay until :meth:`SharedPool.remove`; a reader in another process sees a new entry within its
source's ``refresh`` seconds, a reader made by the same :class:`SharedPool` at its next build.
"""

from __future__ import annotations

import asyncio
import uuid
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from loomctx.embed.protocol import Embedder
from loomctx.errors import ConfigError
from loomctx.items import RAW_RELEVANCE, ContextItem, Tier
from loomctx.retrieval._pool import REFRESH, RecordPool
from loomctx.sources.protocol import BaseSource, SourceRequest
from loomctx.stores.protocol import DEFAULT_TENANT, MemoryRecord, MemoryStore, Scope, check_name

POOL_PREFIX = "shared-pool:"
"""Agent ids starting with this are reserved for shared pools (``shared-pool:<name>``)."""
SHARED_POOL = "shared_pool"
"""The default source name of a pool in a build."""


class SharedPool:
    """One tenant's pool ``name`` in ``store``: agents write entries, every agent may read."""

    def __init__(self, store: MemoryStore, embedder: Embedder, *,
                 tenant: str = DEFAULT_TENANT, name: str = "shared") -> None:
        check_name(tenant, "SharedPool tenant", optional=False)
        check_name(name, "SharedPool name", optional=False)
        self.store = store
        self.embedder = embedder
        self.tenant = tenant
        self.name = name
        self.scope = Scope(tenant=tenant, agent=POOL_PREFIX + name)
        """Where the entries live: the pool's own namespace inside the tenant."""
        self._readers: weakref.WeakSet[SharedPoolSource] = weakref.WeakSet()

    def write(self, text: str, *, by: str, id: str | None = None, importance: float = 0.5,
              now: float = 0.0, metadata: Mapping[str, Any] | None = None) -> str:
        """Add (or, with an existing ``id``, replace) an entry written by agent ``by``;
        returns its id. The readers this pool made see it at their next build."""
        if not isinstance(text, str) or not text.strip():
            raise ConfigError(f"a shared pool entry needs non-empty text, got {text!r}")
        check_name(by, "SharedPool.write by (the writing agent)", optional=False)
        if isinstance(importance, bool) or not isinstance(importance, int | float) \
                or not 0.0 <= importance <= 1.0:
            raise ConfigError(f"importance must be in [0, 1], got {importance!r}")
        eid = id if id is not None else f"pool:{uuid.uuid4().hex[:12]}"
        check_name(eid, "SharedPool.write id", optional=False)
        self.store.put([MemoryRecord(
            id=eid, content=text, level="L4", tenant=self.tenant, agent=self.scope.agent,
            timestamp=now, importance=float(importance),
            metadata={**dict(metadata or {}), "kind": "shared_pool", "pool": self.name,
                      "by": by})], self.embedder.embed([text]))
        self._changed()
        return eid

    def remove(self, ids: Iterable[str]) -> int:
        """Delete entries by id; returns how many were deleted."""
        n = self.store.delete(list(ids), scope=self.scope)
        self._changed()
        return n

    def entries(self) -> list[MemoryRecord]:
        """Every entry, oldest first."""
        return list(self.store.scan(scope=self.scope, level="L4"))

    def source(self, *, reader: str | None = None, include_own: bool = True,
               name: str = SHARED_POOL, limit: int = 10, refresh: float = REFRESH
               ) -> SharedPoolSource:
        """The pool as a source for agent ``reader``'s builds (``include_own=False`` leaves
        out what ``reader`` wrote itself)."""
        src = SharedPoolSource(self, reader=reader, include_own=include_own, name=name,
                               limit=limit, refresh=refresh)
        self._readers.add(src)
        return src

    def _changed(self) -> None:
        for reader in list(self._readers):
            reader.invalidate()


class SharedPoolSource(BaseSource):
    """A shared pool's entries as evidence, ranked for the build's question (lexically and by
    embedding) or, without one, by importance then recency."""

    def __init__(self, pool: SharedPool, *, reader: str | None = None, include_own: bool = True,
                 name: str = SHARED_POOL, limit: int = 10, refresh: float = REFRESH) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ConfigError(f"limit must be an int >= 1, got {limit!r}")
        if not include_own and reader is None:
            raise ConfigError("include_own=False needs reader= (the agent whose own entries "
                              "to leave out)")
        self.pool = pool
        self.reader = reader
        self.include_own = include_own
        self.name = name
        self.limit = limit
        self._records = RecordPool(self._load, pool.embedder, refresh=refresh)

    def _load(self) -> list[MemoryRecord]:
        return [r for r in self.pool.entries()
                if self.include_own or r.metadata.get("by") != self.reader]

    def invalidate(self) -> None:
        """Read the store again at the next build."""
        self._records.invalidate()

    def recall(self, query: str) -> list[tuple[MemoryRecord, float | None]]:
        if query.strip():
            return [(r, s) for r, s in self._records.rank(query, self.limit)]
        live = sorted(self._records.records(), key=lambda r: (-r.importance, -r.timestamp, r.id))
        return [(r, None) for r in live[:self.limit]]

    eager = True  # waits on threads only

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        if self._records.fresh_and_empty():
            return []
        found = await asyncio.to_thread(self.recall, request.query)
        return [ContextItem(
            id=f"pool/{self.pool.name}/{r.id}", source=self.name, content=r.content,
            kind="evidence", tier=Tier.P2, timestamp=r.timestamp, seq=r.seq,
            priority=max(r.importance, 0.5),
            scores={} if score is None else {RAW_RELEVANCE: score},
            metadata={"origin": f"shared_pool:{self.pool.name}", "by": r.metadata.get("by")})
            for r, score in found]


__all__ = ["POOL_PREFIX", "SHARED_POOL", "SharedPool", "SharedPoolSource"]
