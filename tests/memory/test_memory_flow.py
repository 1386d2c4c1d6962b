"""The seed's memory flow reaching builds: what an agent's earlier sessions concluded (L3
summaries and facts, their L4 copies) is recalled by a new default Session of the agent, and
by nothing outside the agent (or the tenant, when asked)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

from loomctx import MemoryOptions, Session
from loomctx.controller import ContextController, L4Persister
from loomctx.events import SessionEnded
from loomctx.stores.memory import InMemoryStore
from loomctx.stores.protocol import MemoryStore, Scope

FIRST = [("user", "The pallet scanner in Hamburg dock 3 keeps rejecting blue labels."),
         ("assistant", "Noted: the Hamburg dock 3 scanner rejects blue labels; use the white "
                       "label stock until the firmware update on Monday.")]
QUESTION = "Which labels should dock 3 in Hamburg use for now?"
ANSWER = "white label stock"


def _first_session(make: Callable[..., Session], store: MemoryStore, **kw) -> str:
    s = make(id="monday", agent="ops", store=store, **kw)
    for role, text in FIRST:
        s.add_message_sync(role, text)
    summary_id = s.end_sync()
    assert summary_id is not None
    return summary_id


def _text(result) -> str:
    return json.dumps(result.payload, ensure_ascii=False)


def test_a_new_default_session_recalls_what_the_agents_earlier_session_concluded(
        make_session) -> None:
    store = InMemoryStore()
    summary_id = _first_session(make_session, store)
    later = make_session(id="tuesday", agent="ops", store=store)
    later.add_message_sync("user", "Morning. The Hamburg team called about dock 3.")
    later.add_message_sync("assistant", "Thanks, what did they need?")

    # A question build: the summary is recalled and ranked with the session's own memories.
    built = later.build_sync(QUESTION, max_tokens=1500)
    assert ANSWER in _text(built)
    row = next(r for r in built.report.items if r.source == "L3_agent")
    assert row.included and summary_id in row.id
    assert {"L3_agent", "L4_semantic"} <= {r.source for r in built.report.items}

    # A turn, as the agent loop builds it: the question as the last user message.
    later.add_message_sync("user", QUESTION)
    assert ANSWER in _text(later.build_sync(max_tokens=1500))


def test_other_agents_and_tenants_do_not_see_it(make_session) -> None:
    store = InMemoryStore()
    _first_session(make_session, store)
    for kw in ({"agent": "sales"}, {"agent": "ops", "tenant": "globex"}):
        other = make_session(id="tuesday", store=store, **kw)
        other.add_message_sync("user", QUESTION)
        assert ANSWER not in _text(other.build_sync(QUESTION, max_tokens=1500))
        assert ANSWER not in _text(other.build_sync(max_tokens=1500))


def test_switched_off_it_is_not_recalled(make_session) -> None:
    store = InMemoryStore()
    _first_session(make_session, store)
    later = make_session(id="tuesday", agent="ops", store=store,
                         memory=MemoryOptions(agent_memory=False))
    assert all(s.name != "L3_agent" for s in later.builder.sources)
    assert ANSWER not in _text(later.build_sync(QUESTION, max_tokens=1500))


def _persist(store: MemoryStore, summary_id: str) -> list[str]:
    """What an L4Persister on the bus does for the session end."""
    return L4Persister(store).persist(SessionEnded(tenant="default", session="monday",
                                                   summary_id=summary_id, at=0.0, agent="ops"))


def test_l4_copies_reach_the_agents_sessions_and_with_tenant_scope_other_agents(
        make_session) -> None:
    store = InMemoryStore()
    summary_id = _first_session(make_session, store)
    copies = _persist(store, summary_id)
    assert copies and store.get(copies, scope=Scope())[0].agent is None  # tenant-global

    # The agent's own new session: the copy and its L3 original are one item.
    mine = make_session(id="tuesday", agent="ops", store=store)
    built = mine.build_sync(QUESTION, max_tokens=1500)
    assert ANSWER in _text(built)
    assert sum(r.source == "L3_agent" and r.included for r in built.report.items) == 1

    # Another agent of the tenant sees the persisted copy (L4 is global in the seed) ...
    wide = make_session(id="t3", agent="sales", store=store)
    built = wide.build_sync(QUESTION, max_tokens=1500)
    assert ANSWER in _text(built)
    row = next(r for r in built.report.items if r.source == "L3_agent" and r.included)
    assert row.id.startswith("L4/ops/monday/")
    # ... unless its agents are kept apart ...
    apart = make_session(id="t2", agent="sales", store=store,
                         memory=MemoryOptions(agent_memory_l4="agent"))
    assert ANSWER not in _text(apart.build_sync(QUESTION, max_tokens=1500))
    # ... and never another tenant's.
    other = make_session(id="t4", agent="sales", tenant="globex", store=store)
    assert ANSWER not in _text(other.build_sync(QUESTION, max_tokens=1500))


def test_controller_sessions_have_it_once(embedder) -> None:
    store = InMemoryStore()
    c = ContextController("ops", store=store, embedder=embedder)
    first = c.create_session("monday")
    for role, text in FIRST:
        first.add_message_sync(role, text)
    asyncio.run(c.end_session("monday"))
    later = c.create_session("tuesday")
    assert sum(s.name == "L3_agent" for s in later.builder.sources) == 1
    assert ANSWER in _text(later.build_sync(QUESTION, max_tokens=1500))


def test_support_concludes_billing_recalls_through_the_bus_within_its_tenant_only(
        embedder) -> None:
    """The seed's flow end to end: agent ``support`` ends a session, the L4Persister on the bus
    copies its summary to L4, and a new session of agent ``billing`` of the same tenant recalls
    it by default; billing of another tenant on the same store does not."""
    from loomctx.bus import InProcessEventBus

    async def main() -> tuple[str, str]:
        store = InMemoryStore()
        bus = InProcessEventBus()
        await L4Persister(store, embedder=embedder).subscribe(bus)
        support = ContextController("support", store=store, embedder=embedder, events=bus,
                                    tenant="acme")
        s = support.create_session("call-1")
        for role, text in FIRST:
            await s.add_message(role, text)
        await support.end_session(s)
        await bus.drain()  # the persister has copied the summary to tenant-global L4
        builds = []
        for tenant in ("acme", "globex"):
            billing = Session(f"inv-{tenant}", agent="billing", tenant=tenant, store=store,
                              embedder=embedder, clock=lambda: 0.0)
            builds.append(_text(await billing.build(QUESTION, max_tokens=1500)))
        await bus.aclose()
        return builds[0], builds[1]

    same_tenant, other_tenant = asyncio.run(main())
    assert ANSWER in same_tenant
    assert ANSWER not in other_tenant
