"""L3 → L4: an ended session's agent-level memory, persisted tenant-wide through the event bus.

When a session ends it writes its summary at agent level (L3) and emits
:class:`~loomctx.events.SessionEnded`. :class:`L4Persister` is a consumer group on the bus
(in process or Redis): for each such event it copies the agent's L3 records of that session —
the session's summary and the agent's cross-session facts — into tenant-global L4 records
(``Scope(tenant=t)``, no agent, no session), so any agent of the tenant can search them and no
other tenant can. Going through the bus puts the write where the store is, in whichever process
runs the persister, and makes it survive a crash of the session's process (the event waits in
the stream until a persister acknowledges it).

L3 moves to L4 at session end or on a timer: :meth:`L4Persister.run_every`
is the timer, for agents whose sessions run for days. Every ``interval`` seconds it copies each
given agent's L3 records (every summary and fact so far) the same way, so a long session's
facts reach the tenant before it ends; the copies of a timer and of a session end are the same
records (same ids), so running both never duplicates anything.

Idempotent by construction: an L4 record's id is derived from its L3 record
(``l3:<agent>:<session or ->:<id>``), so a redelivered event rewrites the same records, and the
bus skips an event id the group already acknowledged. Facts have no session, so each session
end carries the agent's current facts over again (a replace, not a duplicate).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence

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
        return self._copy([r for r in self.store.scan(scope=scope, level="L3")
                           if r.session == event.session or r.session is None])

    def persist_agent(self, scope: Scope) -> list[str]:
        """Write the L4 copies of every L3 record of the agent ``scope`` names (its summaries
        and facts); returns their ids."""
        if scope.agent is None or scope.session is not None:
            raise ConfigError(f"persist_agent needs an agent scope, Scope(tenant=..., "
                              f"agent=...) without a session, got {scope!r}")
        return self._copy(list(self.store.scan(scope=scope, level="L3")))

    async def run_every(self, interval: float, scopes: Sequence[Scope], *,
                        stop: asyncio.Event | None = None, rounds: int | None = None) -> int:
        """Persist each agent scope of ``scopes`` now and then every ``interval`` seconds,
        until ``stop`` is set or after ``rounds`` rounds (None: no limit; cancel the task to
        end it); returns the L4 records written. A failing round is logged and the next one
        runs: a timer must not die of one bad write."""
        if isinstance(interval, bool) or not isinstance(interval, int | float) \
                or not interval > 0:
            raise ConfigError(f"interval must be > 0 seconds, got {interval!r}")
        if rounds is not None and (isinstance(rounds, bool) or not isinstance(rounds, int)
                                   or rounds < 1):
            raise ConfigError(f"rounds must be an int >= 1 or None, got {rounds!r}")
        for scope in scopes:
            if scope.agent is None or scope.session is not None:
                raise ConfigError(f"run_every needs agent scopes (tenant + agent, no "
                                  f"session), got {scope!r}")
        written, done = 0, 0
        while stop is None or not stop.is_set():
            for scope in scopes:
                try:
                    written += len(await asyncio.to_thread(self.persist_agent, scope))
                except Exception as exc:  # logged and retried at the next round
                    log.warning("persisting L3 → L4 for %r failed: %s", scope, exc)
            done += 1
            if rounds is not None and done >= rounds:
                break
            if stop is None:
                await asyncio.sleep(interval)
            else:
                with contextlib.suppress(TimeoutError):  # the interval passed: next round
                    await asyncio.wait_for(stop.wait(), interval)
        return written

    def _copy(self, picked: list[MemoryRecord]) -> list[str]:
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
