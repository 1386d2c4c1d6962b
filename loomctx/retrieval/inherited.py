"""``InheritedSource``: a sub-agent sees its parent's memory, read-only.

A sub-agent works in its own session (its own history, its own store scope) but was spawned
for a part of its parent's task, so its builds recall from the parent's conversation too: the
parent's memories that match the build's question (lexically and by embedding, fused by
reciprocal rank), or, for a build without a question, the parent's important (L2) memories
and newest messages. Read-only by construction: the source only searches the parent's memory;
nothing the sub-agent adds or builds is written to the parent's scope.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol

from loomctx.errors import ConfigError
from loomctx.items import RAW_RELEVANCE, ContextItem, Tier
from loomctx.memory.tiers import TieredMemory
from loomctx.sources.protocol import BaseSource, SourceRequest
from loomctx.stores.protocol import MemoryRecord

RRF_K = 60
"""Reciprocal-rank-fusion constant for merging the lexical and dense lists."""


class HasMemory(Protocol):
    """Anything that holds tiered memory (a :class:`~loomctx.session.Session`)."""

    @property
    def memory(self) -> TieredMemory: ...


class InheritedSource(BaseSource):
    """The parent's memory as evidence in the sub-agent's builds (source ``inherited``).

    ``parent`` is the parent's :class:`~loomctx.session.Session` (or its ``TieredMemory``).
    """

    def __init__(self, parent: HasMemory | TieredMemory, *, name: str = "inherited",
                 limit: int = 10, recent: int = 4, share: float | None = None) -> None:
        memory = parent if isinstance(parent, TieredMemory) else getattr(parent, "memory", None)
        if not isinstance(memory, TieredMemory):
            raise ConfigError(f"InheritedSource needs the parent's Session or TieredMemory, got "
                              f"{type(parent).__name__}")
        for option, value in (("limit", limit), ("recent", recent)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"{option} must be an int >= 0, got {value!r}")
        if share is not None and not (isinstance(share, int | float)
                                      and not isinstance(share, bool) and 0 < share <= 1):
            raise ConfigError(f"share must be in (0, 1] or None, got {share!r}; e.g. 0.10 "
                              "for the parent's memory")
        self.name = name
        self.parent = memory
        self.limit = limit
        """Parent memories recalled for a question."""
        self.recent = recent
        """The parent's newest messages shown to a build without a question."""
        self.share = share
        """Budget ratio (None: no share of its own; it competes for what other sources
        leave, on one scale with them)."""

    def _dense(self, query: str) -> list[MemoryRecord]:
        p = self.parent
        return [h.record for h in p.store.search_vector(p.query_vector(query), scope=p.scope,
                                                        limit=self.limit)]

    def recall(self, query: str, dense: list[MemoryRecord] | None = None,
               ) -> list[tuple[MemoryRecord, float]]:
        """The parent's memories for ``query``, best first, with their fused score (``dense``:
        the dense list when already searched)."""
        p = self.parent
        if not query.strip() or not self.limit:
            return []
        lexical = [h.record for h in p.search_lexical(query, self.limit)]
        if dense is None:
            dense = self._dense(query)
        fused: dict[str, float] = {}
        records: dict[str, MemoryRecord] = {}
        for ranked in (lexical, dense):
            for rank, r in enumerate(ranked):
                records.setdefault(r.id, p.records.get(r.id, r))
                fused[r.id] = fused.get(r.id, 0.0) + 1.0 / (RRF_K + rank + 1)
        order = sorted(fused, key=lambda i: (-fused[i], records[i].seq, i))[:self.limit]
        return [(records[i], fused[i]) for i in order]

    def _unqueried(self) -> list[MemoryRecord]:
        p = self.parent
        ids = list(dict.fromkeys([*p.l2_ids, *(it.id for it in
                                              p.history.items[-self.recent:] if self.recent)]))
        return [p.records[i] for i in ids if i in p.records]

    eager = True  # waits on threads only

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        if request.query.strip() and self.limit:
            # The embedding and the store search run off the event loop; the parent's
            # in-process lexical index is read on it, as its own retrieval does.
            dense = await asyncio.to_thread(self._dense, request.query)
            found = self.recall(request.query, dense)
            return [self._item(r, score) for r, score in found]
        if request.query.strip():
            return []
        return [self._item(r, None) for r in self._unqueried()]

    def _item(self, r: MemoryRecord, score: float | None) -> ContextItem:
        return ContextItem(
            id=f"inherited/{self.parent.session}/{r.id}", source=self.name, content=r.content,
            kind="evidence", role=r.role, tier=Tier.P2, timestamp=r.timestamp, seq=r.seq,
            priority=max(r.importance, 0.5),
            scores={} if score is None else {RAW_RELEVANCE: score},
            metadata={"origin": f"inherited:{self.parent.session}", "level": r.level,
                      "session": self.parent.session, "agent": self.parent.agent})


__all__ = ["InheritedSource"]
