"""The shared L2 pool: an agent's sessions see each other's important memories for a while.

L2 (session-important memory) lives at session level and is *distributed*: what one
session of an agent found important (an evicted message scored above
``MemoryOptions.promote_threshold``) is offered to the agent's other sessions, for the medium
term (hours). :class:`SharedL2Source` is that pool as seen from one session: the records at
level L2 in ``Scope(tenant, agent)`` that belong to the agent's *other* sessions and are
younger than ``ttl`` seconds (counted from when they were said, against the build's time), ranked
for the build's question (lexically and by embedding) or, without one, by importance.

A memory leaves the pool when it expires by ``ttl`` here, or when its own session moves it out
of L2 (its ``MemoryOptions.l2_ttl``, L2 overflow, the session's end: all move it to L4). Another
agent's or tenant's L2 is never read. The options are ``MemoryOptions.l2_shared`` and
``MemoryOptions.l2_shared_ttl``; the source is named ``L2_shared``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from loomctx.embed.protocol import Embedder
from loomctx.errors import ConfigError
from loomctx.items import RAW_RELEVANCE, ContextItem, Tier
from loomctx.retrieval._pool import REFRESH, RecordPool
from loomctx.sources.protocol import BaseSource, SourceRequest
from loomctx.stores.protocol import MemoryRecord, MemoryStore, Scope

SHARED_L2 = "L2_shared"
"""The source name of the shared L2 pool in a session's builds."""


class SharedL2Source(BaseSource):
    """The L2 memories of the agent's other sessions, while younger than ``ttl`` seconds."""

    def __init__(self, store: MemoryStore, embedder: Embedder, *, tenant: str, agent: str,
                 session: str, ttl: float | None, name: str = SHARED_L2, limit: int = 10,
                 refresh: float = REFRESH, own: Callable[[], int] | None = None) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ConfigError(f"limit must be an int >= 1, got {limit!r}")
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float)
                                or not ttl > 0):
            raise ConfigError(f"ttl must be > 0 seconds or None, got {ttl!r}")
        self.name = name
        self.scope = Scope(tenant=tenant, agent=agent)
        self.session = session
        self.ttl = ttl
        """Seconds a memory stays in the pool after it was said (None: until it leaves L2)."""
        self.limit = limit
        self.store = store
        self.own = own
        """How many L2 memories this session holds (its ``TieredMemory.l2_ids``): when the
        agent holds no more, no other session has any and the store is not scanned."""
        self._pool = RecordPool(self._load, embedder, refresh=refresh)

    def _load(self) -> list[MemoryRecord]:
        # A count by level is an index look-up; the ordered scan may walk the whole scope.
        if self.store.count(scope=self.scope, level="L2") <= (self.own() if self.own else 0):
            return []
        return [r for r in self.store.scan(scope=self.scope, level="L2")
                if r.session != self.session]

    def invalidate(self) -> None:
        """Read the store again at the next build."""
        self._pool.invalidate()

    def _fresh(self, r: MemoryRecord, now: float) -> bool:
        return self.ttl is None or now - r.timestamp <= self.ttl

    def recall(self, query: str, now: float) -> list[tuple[MemoryRecord, float | None]]:
        """The pool's live memories for ``query`` (best first, fused score), or without a
        query the most important (score None)."""
        if query.strip():
            ranked = self._pool.rank(query, len(self._pool.records()))
            out: list[tuple[MemoryRecord, float | None]] = [
                (r, s) for r, s in ranked if self._fresh(r, now)]
            return out[:self.limit]
        live = [r for r in self._pool.records() if self._fresh(r, now)]
        live.sort(key=lambda r: (-r.importance, -r.timestamp, r.id))
        return [(r, None) for r in live[:self.limit]]

    eager = True  # waits on threads only

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        if self._pool.fresh_and_empty():
            return []
        found = await asyncio.to_thread(self.recall, request.query, request.now)
        return [ContextItem(
            id=f"L2/{r.session}/{r.id}", source=self.name, content=r.content, kind="evidence",
            role=r.role, tier=Tier.P2, timestamp=r.timestamp, seq=r.seq,
            priority=max(r.importance, 0.5),
            scores={} if score is None else {RAW_RELEVANCE: score},
            metadata={"origin": "memory:L2_shared", "level": r.level, "session": r.session})
            for r, score in found]


__all__ = ["SHARED_L2", "SharedL2Source"]
