"""L3 → L4 through the event bus: an ended session's summary and the agent's facts become
tenant-global L4 records, searchable in their tenant and nowhere else, written once in effect."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest

from loomctx import HashingEmbedder, SQLiteStore
from loomctx.bus import BusOptions, InProcessEventBus
from loomctx.bus.redis import RedisEventBus, RedisOptions
from loomctx.controller import ContextController, L4Persister
from loomctx.errors import ConfigError
from loomctx.events import SessionEnded
from loomctx.servers import RedisServer
from loomctx.stores.protocol import MemoryStore, Scope

WORDS = {"acme": ("zeppelin", "Acme ships zeppelin parts from Hamburg."),
         "globex": ("submarine", "Globex leases submarine docks in Kiel.")}


async def _run(bus: Any, store: MemoryStore) -> tuple[L4Persister, dict[str, str]]:
    """Both tenants' agent ends one session on the bus; returns the persister and summaries."""
    persister = L4Persister(store, embedder=HashingEmbedder())
    await persister.subscribe(bus)
    summaries = {}
    for tenant, (word, fact) in WORDS.items():
        c = ContextController("ops", store=store, tenant=tenant, embedder=HashingEmbedder(),
                              events=bus)
        c.add_fact(fact, id="f1")
        s = c.create_session("s1")
        await s.add_message("user", f"Where do the {word} crates go this week?")
        await s.add_message("assistant", f"The {word} crates go to dock 4 on Monday.")
        summary = await c.end_session("s1")
        assert summary is not None
        summaries[tenant] = summary
    await bus.drain()
    return persister, summaries


def _l4(store: MemoryStore, query: str, tenant: str) -> list[str]:
    hits = store.search_lexical(query, scope=Scope(tenant=tenant), level="L4", limit=50)
    return sorted(h.record.id for h in hits if h.record.metadata.get("origin") == "L3")


def _check(store: MemoryStore, summaries: dict[str, str]) -> None:
    for tenant, (word, _) in WORDS.items():
        other = next(t for t in WORDS if t != tenant)
        ids = _l4(store, word, tenant)
        assert ids == sorted(["l3:ops:-:f1", f"l3:ops:s1:{summaries[tenant]}"])
        assert _l4(store, word, other) == []  # another tenant never finds them
        [copy] = store.get([f"l3:ops:s1:{summaries[tenant]}"], scope=Scope(tenant=tenant))
        assert (copy.agent, copy.session, copy.level) == (None, None, "L4")
        assert copy.metadata["agent"] == "ops" and copy.metadata["session"] == "s1"
        # tenant-global: below the tenant (an agent's scope) they are not covered
        assert store.get([copy.id], scope=Scope(tenant=tenant, agent="ops")) == []
        vec = HashingEmbedder().embed([word])[0]
        found = store.search_vector(vec, scope=Scope(tenant=tenant), level="L4", limit=50)
        assert copy.id in {h.record.id for h in found}


def test_session_end_persists_l3_to_l4_per_tenant_in_process(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "l4.db")

    async def main() -> tuple[L4Persister, dict[str, str], int, int]:
        bus = InProcessEventBus(BusOptions(roundtrip=True))  # what crosses processes
        persister, summaries = await _run(bus, store)
        before = store.count(scope=Scope(tenant="acme"), level="L4")
        # a producer's retry (same id) and a replayed event (new id) change nothing
        again = SessionEnded(tenant="acme", session="s1", summary_id=summaries["acme"],
                             at=0.0, agent="ops")
        await bus.publish(again, event_id="replay")
        await bus.publish(again, event_id="replay")
        await bus.publish(again)
        await bus.aclose()
        return persister, summaries, before, store.count(scope=Scope(tenant="acme"), level="L4")

    persister, summaries, before, after = asyncio.run(main())
    _check(store, summaries)
    assert after == before
    assert persister.persisted == 2 * 2 + 2 * 2  # two records per end, two ends replayed
    store.close()


def test_session_end_persists_l3_to_l4_through_redis(tmp_path: Path,
                                                       redis_server: RedisServer) -> None:
    store = SQLiteStore(tmp_path / "l4.db")

    async def main() -> dict[str, str]:
        bus = RedisEventBus(redis_server.url, stream_prefix=f"l4-{uuid.uuid4().hex[:8]}",
                            redis_options=RedisOptions(block=0.2))
        _, summaries = await _run(bus, store)
        await bus.aclose()
        return summaries

    _check(store, asyncio.run(main()))
    store.close()


def test_an_event_without_agent_is_refused_not_guessed(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "l4.db")

    async def main() -> list[Any]:
        bus = InProcessEventBus(BusOptions(max_attempts=1))
        await L4Persister(store).subscribe(bus)
        await bus.publish(SessionEnded(tenant="acme", session="s1", summary_id=None, at=0.0))
        await bus.aclose()
        return await bus.read_dead_letters()

    [dead] = asyncio.run(main())
    assert "names no agent" in dead.error and ConfigError.__name__ in dead.error
    store.close()


def test_a_timer_persists_l3_to_l4_without_a_session_end() -> None:
    """Seed 001: L3 → L4 at session end *or on a timer*; the timer's copies are the same
    records a session end writes, so rounds rewrite them instead of adding duplicates."""
    store = SQLiteStore(":memory:")
    acme = ContextController("ops", store=store, tenant="acme", embedder=HashingEmbedder())
    globex = ContextController("ops", store=store, tenant="globex", embedder=HashingEmbedder())
    acme.add_fact(WORDS["acme"][1], id="f1")
    globex.add_fact(WORDS["globex"][1], id="f1")
    persister = L4Persister(store, embedder=HashingEmbedder())
    scope = Scope(tenant="acme", agent="ops")

    def l4(tenant: str) -> list[str]:
        return sorted(r.content for r in store.scan(scope=Scope(tenant=tenant), level="L4"))

    assert l4("acme") == []
    assert asyncio.run(persister.run_every(0.01, [scope], rounds=1)) == 1
    assert l4("acme") == [WORDS["acme"][1]]
    acme.add_fact("Acme's Hamburg dock closes on Sundays.", id="f2")
    assert asyncio.run(persister.run_every(0.01, [scope], rounds=2)) == 4
    assert l4("acme") == sorted([WORDS["acme"][1], "Acme's Hamburg dock closes on Sundays."])
    assert l4("globex") == []  # a scope not given is not read

    stop = asyncio.Event()
    stop.set()
    assert asyncio.run(persister.run_every(60, [scope], stop=stop)) == 0


def test_timer_arguments_are_checked() -> None:
    persister = L4Persister(SQLiteStore(":memory:"))
    agent = [Scope(agent="a")]
    with pytest.raises(ConfigError, match="interval must be > 0 seconds, got 0"):
        asyncio.run(persister.run_every(0, agent))
    with pytest.raises(ConfigError, match="rounds must be an int >= 1 or None, got 0"):
        asyncio.run(persister.run_every(1, agent, rounds=0))
    for bad in (Scope(), Scope(agent="a", session="s")):
        with pytest.raises(ConfigError, match="agent scope"):
            persister.persist_agent(bad)
