"""The agent's memory across its sessions, recalled by every new session of the agent.

The memory flow across sessions: a session ends → its summary becomes agent-level memory (L3) →
:class:`~loomctx.controller.persist.L4Persister` copies it into tenant-global L4. Both reach the
agent's later sessions by default: every :class:`~loomctx.session.Session` has an
:class:`AgentMemorySource` (``MemoryOptions.agent_memory``), so a question in a new session of
the agent recalls what its earlier sessions concluded and the facts stored for it, ranked on one
scale with the session's own memories (the builder scores every evidence source alike).

Scope: the agent's own L3 records (``Scope(tenant, agent)``: summaries and cross-session facts)
and the L4 copies of them. With ``l4="tenant"`` (what a Session reads by default,
``MemoryOptions.agent_memory_l4``: L4 is global in the seed) the L4 copies of every agent of
the tenant join, the persisted, tenant-global view every agent reads; another tenant's records
never. An agent's L3 itself stays the agent's: another agent sees what it concluded once it is
persisted to L4.

An agent keeps one summary per session and a few facts, so the candidates are few: they are
read from the store at the first build and again at most every ``refresh`` seconds
(:class:`~loomctx.retrieval._pool.RecordPool`), and ranked here, lexically and by embedding,
fused by reciprocal rank. A copy is found through its L3 record (its id is derived
from it, :func:`l4_id`), so a store holding only L4 copies without their L3 originals shows none.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence
from typing import Literal

from loomctx.embed.protocol import Embedder
from loomctx.errors import ConfigError
from loomctx.items import RAW_RELEVANCE, ContextItem, Tier
from loomctx.retrieval._pool import REFRESH, RecordPool
from loomctx.sources.floors import SIMILARITY, check_floor, mark_memory
from loomctx.sources.protocol import BaseSource, SourceRequest
from loomctx.stores.protocol import MemoryRecord, MemoryStore, Scope

AGENT_MEMORY = "L3_agent"
"""The source name of the agent's memory in a session's builds."""
MAX_RECORDS = 2000
"""The newest L3 records ranked per build (an agent with more sessions ranks the newest)."""

L4Scope = Literal["agent", "tenant", "off"]


def l4_id(record: MemoryRecord) -> str:
    """The id of the L4 copy of an agent-level L3 record (stable, so rewrites replace)."""
    return f"l3:{record.agent}:{record.session or '-'}:{record.id}"


class AgentMemorySource(BaseSource):
    """L3 of the agent (and L4 copies), recalled lexically and densely for the build's question.

    ``session`` (optional) is the session this source serves: its own summary is left out (a
    session's memories are recalled by its own retrieval).
    """

    def __init__(self, store: MemoryStore, embedder: Embedder, *, tenant: str, agent: str,
                 name: str = AGENT_MEMORY, limit: int = 10, l4: L4Scope = "agent",
                 session: str | None = None, refresh: float = REFRESH,
                 min_score: float | None = None) -> None:
        check_floor("min_score", min_score, -1.0, 1.0)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ConfigError(f"limit must be an int >= 1, got {limit!r}")
        if l4 not in ("agent", "tenant", "off"):
            raise ConfigError(f"l4 must be 'agent', 'tenant' or 'off', got {l4!r}")
        self.name = name
        self.store = store
        self.embedder = embedder
        self.scope = Scope(tenant=tenant, agent=agent)
        self.limit = limit
        self.l4 = l4
        """Which L4 copies join: this agent's, every agent's of the tenant, or none."""
        self.session = session
        self.min_score = min_score
        """The seed's L4 ``min_score``: records recalled with a cosine similarity to the
        question below it are left out, reason ``below_min_score`` (None: no floor)."""
        self._pool = RecordPool(self.pool, embedder, refresh=refresh)
        """What :meth:`pool` read, reused for ``refresh`` seconds (what another session ends
        with shows up within that time; a new session reads it at its first build)."""

    def invalidate(self) -> None:
        """Read the store again at the next recall (after writing L3 records, say)."""
        self._pool.invalidate()

    def pool(self) -> list[MemoryRecord]:
        """Every record this source may recall: the agent's L3, then the L4 copies of L3
        records (this agent's, or the tenant's with ``l4="tenant"``) that are not already
        there as originals."""
        tenant = Scope(tenant=self.scope.tenant)
        # A count by level is an index look-up; the ordered scan may walk the whole scope.
        if self.store.count(scope=self.scope if self.l4 != "tenant" else tenant,
                            level="L3") == 0:
            return []
        own = [r for r in self.store.scan(scope=self.scope, level="L3")
               if self.session is None or r.session != self.session][-MAX_RECORDS:]
        if self.l4 == "off":
            return own
        # the newest MAX_RECORDS of the tenant's, held while scanning (the scan may be long)
        originals = own if self.l4 == "agent" else list(deque((
            r for r in self.store.scan(scope=tenant, level="L3")
            if self.session is None or (r.agent, r.session) != (self.scope.agent, self.session)
        ), maxlen=MAX_RECORDS))
        have = {l4_id(r) for r in own}
        wanted = [l4_id(r) for r in originals if l4_id(r) not in have]
        copies = [c for c in self.store.get(wanted, scope=tenant)
                  if c.agent is None and c.level == "L4"] if wanted else []
        return own + copies

    def recall(self, query: str, limit: int | None = None) -> list[tuple[MemoryRecord, float]]:
        """The records for ``query``, best first, with their fused score."""
        return self._pool.rank(query, limit or self.limit)

    eager = True  # waits on threads only

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        if not request.query.strip() or self._pool.fresh_and_empty():
            return []
        found = await asyncio.to_thread(self._pool.ranked, request.query, self.limit)
        return mark_memory([_item(self.name, r, score, cosine) for r, score, cosine in found],
                           self.min_score)


def _item(source: str, r: MemoryRecord, score: float, cosine: float) -> ContextItem:
    copy = r.agent is None
    agent = r.metadata.get("agent") if copy else r.agent
    session = r.metadata.get("session") if copy else r.session
    return ContextItem(
        id=f"L4/{agent}/{session or '-'}/{r.metadata.get('l3_id', r.id)}" if copy
        else f"L3/{session or '-'}/{r.id}",
        source=source, content=r.content, kind="evidence", tier=Tier.P2,
        timestamp=r.timestamp, seq=r.seq, priority=r.importance,
        scores={RAW_RELEVANCE: score, SIMILARITY: cosine},
        metadata={**dict(r.metadata), "origin": f"memory:{r.level}", "level": r.level,
                  "agent": agent, "session": session})


__all__ = ["AGENT_MEMORY", "MAX_RECORDS", "AgentMemorySource", "L4Scope", "l4_id"]
