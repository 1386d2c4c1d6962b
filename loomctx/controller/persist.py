"""L3 → L4: an ended session's agent-level memory, persisted tenant-wide through the event bus.

When a session ends it writes its summary at agent level (L3) and emits
:class:`~loomctx.events.SessionEnded`. :class:`L4Persister` is a consumer group on the bus
(in process or Redis): for each such event it copies the agent's L3 records of that session —
the session's summary and the agent's cross-session facts — into tenant-global L4 records
(``Scope(tenant=t)``, no agent, no session), so any agent of the tenant can search them and no
other tenant can. Going through the bus puts the write where the store is, in whichever process
runs the persister, and makes it survive a crash of the session's process (the event waits in
the stream until a persister acknowledges it).

Idempotent by construction: an L4 record's id is derived from its L3 record
(``l3:<agent>:<session or ->:<id>``), so a redelivered event rewrites the same records, and the
bus skips an event id the group already acknowledged. Facts have no session, so each session
end carries the agent's current facts over again (a replace, not a duplicate).
"""

from __future__ import annotations

import asyncio
import logging

from loomctx.bus.protocol import Envelope, EventBus
from loomctx.embed.protocol import Embedder
from loomctx.errors import ConfigError
from loomctx.events import SessionEnded
from loomctx.retrieval.agent_memory import l4_id
from loomctx.stores.protocol import MemoryRecord, MemoryStore, Scope

log = logging.getLogger(__name__)

L4_GROUP = "loomctx-l4-persister"
"""The consumer group persisters join: one of them handles each session end."""


class L4Persister:
    """A consumer of ``session_ended`` that persists the session's L3 records as L4."""

    def __init__(self, store: MemoryStore, *, embedder: Embedder | None = None,
                 group: str = L4_GROUP) -> None:
        self.store = store
        self.embedder = embedder
        """Embeds the L4 copies for vector search (None: lexical search only)."""
        self.group = group
        self.persisted = 0
        """L4 records written by this persister (rewrites of a redelivery included)."""

    async def subscribe(self, bus: EventBus, *, consumer: str | None = None) -> None:
        """Join the persisters' group on ``bus`` for every session end published from now on."""
        await bus.subscribe("session_ended", self.handle, group=self.group, consumer=consumer)

    async def handle(self, envelope: Envelope) -> None:
        event = envelope.event
        if not isinstance(event, SessionEnded):
            return
        if event.agent is None:
            raise ConfigError(f"session_ended {envelope.id} of session {event.session!r} names "
                              "no agent, so its L3 records cannot be found: upgrade the "
                              "producer (loomctx ≥ the version with SessionEnded.agent)")
        written = await asyncio.to_thread(self.persist, event)
        log.info("session %r of agent %r: %d L3 records persisted to L4 (event %s)",
                 event.session, event.agent, len(written), envelope.id)

    def persist(self, event: SessionEnded) -> list[str]:
        """Write the L4 copies for one ended session; returns their ids."""
        assert event.agent is not None
        scope = Scope(tenant=event.tenant, agent=event.agent)
        picked = [r for r in self.store.scan(scope=scope, level="L3")
                  if r.session == event.session or r.session is None]
        if not picked:
            return []
        copies = [MemoryRecord(
            id=l4_id(r), content=r.content, level="L4", role=r.role, timestamp=r.timestamp,
            tenant=r.tenant, importance=r.importance, seq=r.seq,
            metadata={**dict(r.metadata), "origin": "L3", "agent": r.agent,
                      "session": r.session, "l3_id": r.id}) for r in picked]
        vectors = None if self.embedder is None else self.embedder.embed(
            [c.content for c in copies])
        self.store.put(copies, vectors)
        self.persisted += len(copies)
        return [c.id for c in copies]


__all__ = ["L4_GROUP", "L4Persister", "l4_id"]
