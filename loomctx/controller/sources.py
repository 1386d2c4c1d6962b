"""The sources a controller builds from: one per session, and the agent's L3 memory.

:class:`SessionSource` wraps a session's unified retrieval over its own memory under the name
``session:<id>``, so one :class:`~loomctx.builder.ContextBuilder` over many of them ranks every
session's candidates on one scale, packs them under one budget, and reports each item under the
session it came from. :class:`AgentMemorySource` recalls the agent's L3 records (session
summaries and cross-session facts) in the scope of the agent, so every session of that agent
can retrieve them and no other agent or tenant can.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace

from loomctx.embed.protocol import Embedder
from loomctx.errors import ConfigError
from loomctx.items import RAW_RELEVANCE, ContextItem, Tier
from loomctx.retrieval.source import UnifiedRetrievalSource
from loomctx.session import Session
from loomctx.sources.protocol import SourceRequest
from loomctx.stores.protocol import Hit, MemoryRecord, MemoryStore, Scope

SESSION_PREFIX = "session:"
"""Source names of per-session sources start with this; the rest is the session id."""
RRF_K = 60
"""Reciprocal-rank-fusion constant for merging the lexical and dense lists of L3 recall."""


class SessionSource:
    """One session's retrieval over its memory (every tier it holds), as a builder source.

    Item ids get the session id in front, so two sessions reusing a message id stay two items;
    ``metadata["session"]`` names the session as well.
    """

    def __init__(self, session: Session, *, recall_limit: int = 20) -> None:
        self.session = session
        self.name = f"{SESSION_PREFIX}{session.id}"
        self._retrieval = UnifiedRetrievalSource(session.memory, name=self.name,
                                                 recall_limit=recall_limit)

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        items = await self._retrieval.collect(request)
        sid = self.session.id
        return [replace(it, id=f"{sid}/{it.id}", metadata={**it.metadata, "session": sid})
                for it in items]


class AgentMemorySource:
    """L3: the agent's memory across its sessions, recalled lexically and densely.

    It reads ``Scope(tenant, agent)`` at level L3 only: the summaries ``Session.end`` writes
    (owned by their session) and facts the controller stores for the agent (no session).
    """

    def __init__(self, store: MemoryStore, embedder: Embedder, *, tenant: str, agent: str,
                 name: str = "L3_agent", limit: int = 10) -> None:
        if limit < 1:
            raise ConfigError(f"limit must be >= 1, got {limit!r}")
        self.name = name
        self.store = store
        self.embedder = embedder
        self.scope = Scope(tenant=tenant, agent=agent)
        self.limit = limit

    def recall(self, query: str, limit: int | None = None) -> list[tuple[MemoryRecord, float]]:
        """The agent's L3 records for ``query``, best first, with their fused score."""
        if not query.strip():
            return []
        n = limit or self.limit
        lexical = self.store.search_lexical(query, scope=self.scope, limit=n, level="L3")
        qvec = self.embedder.embed([query])[0]
        dense = self.store.search_vector(qvec, scope=self.scope, limit=n, level="L3")
        return _fuse(lexical, dense)[:n]

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        found = await asyncio.to_thread(self.recall, request.query)
        return [
            ContextItem(id=f"L3/{r.session or '-'}/{r.id}", source=self.name, content=r.content,
                        kind="evidence", tier=Tier.P2, timestamp=r.timestamp, seq=r.seq,
                        priority=r.importance, scores={RAW_RELEVANCE: score},
                        metadata={"origin": "memory:L3", "level": r.level,
                                  "session": r.session, **dict(r.metadata)})
            for r, score in found
        ]


def _fuse(*lists: list[Hit]) -> list[tuple[MemoryRecord, float]]:
    """Reciprocal-rank fusion: a record high in either list ranks high; ties keep first seen."""
    scores: dict[tuple[str | None, str], float] = {}
    records: dict[tuple[str | None, str], MemoryRecord] = {}
    for hits in lists:
        for rank, h in enumerate(hits):
            key = (h.record.session, h.record.id)
            records.setdefault(key, h.record)
            scores[key] = scores.get(key, 0.0) + 1.0 / (RRF_K + rank + 1)
    order = sorted(scores, key=lambda k: -scores[k])
    return [(records[k], scores[k]) for k in order]


def session_of(source: str) -> str | None:
    """The session id a per-session source name stands for (None for any other source)."""
    return source[len(SESSION_PREFIX):] if source.startswith(SESSION_PREFIX) else None


__all__ = ["AgentMemorySource", "SessionSource", "session_of"]
