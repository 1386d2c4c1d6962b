"""L3: session summaries and facts at agent scope, seen by the agent's sessions and no one else."""

from __future__ import annotations

import asyncio
from pathlib import Path

from loomctx import HashingEmbedder, SQLiteStore
from loomctx.controller import ContextController
from loomctx.stores.protocol import MemoryStore, Scope

FACT = "The Berlin warehouse closes at 18:00 on Fridays."
QUESTION = "When does the Berlin warehouse close on Fridays?"


def _build_texts(c: ContextController, session_id: str) -> str:
    result = c.sessions[session_id].build_sync(QUESTION, max_tokens=600)
    return "\n".join(str(m["content"]) for m in result.messages)


def _controllers(store: MemoryStore) -> tuple[ContextController, ...]:
    ops = ContextController("ops", store=store, embedder=HashingEmbedder())
    sales = ContextController("sales", store=store, embedder=HashingEmbedder())
    other_tenant = ContextController("ops", store=store, tenant="globex",
                                     embedder=HashingEmbedder())
    return ops, sales, other_tenant


def test_facts_and_summaries_reach_every_session_of_the_agent_only(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "l3.db")
    ops, sales, other_tenant = _controllers(store)
    ops.add_fact(FACT, id="f1")
    first = ops.create_session("first")
    first.add_message_sync("user", "Truck 12 for the Berlin warehouse left late on Friday.")
    first.add_message_sync("assistant", "Noted: truck 12 for Berlin left late on Friday.")
    summary_id = asyncio.run(ops.end_session("first"))
    assert summary_id is not None
    summary = store.get([summary_id], scope=Scope(agent="ops", session="first"))[0]
    assert summary.level == "L3"

    # A later session of the same agent retrieves both the fact and the earlier summary.
    ops.create_session("second")
    seen = _build_texts(ops, "second")
    assert FACT in seen
    assert summary.content in seen
    assert {r.id for r in ops.recall(QUESTION)} == {"f1", summary_id}

    # Another agent of the tenant and the same agent name in another tenant see none of it.
    sales.create_session("second")
    other_tenant.create_session("second")
    for c in (sales, other_tenant):
        assert c.recall(QUESTION) == []
        text = _build_texts(c, "second")
        assert FACT not in text and summary.content not in text
    store.close()


def test_facts_survive_a_restart_of_the_store(tmp_path: Path) -> None:
    path = tmp_path / "restart.db"
    store = SQLiteStore(path)
    ContextController("ops", store=store, embedder=HashingEmbedder()).add_fact(FACT, id="f1")
    store.close()
    reopened = SQLiteStore(path)
    c = ContextController("ops", store=reopened, embedder=HashingEmbedder())
    assert [r.id for r in c.recall(QUESTION)] == ["f1"]
    assert reopened.count(scope=Scope(agent="ops"), level="L3") == 1
    reopened.close()


def test_aggregate_context_carries_the_agent_memory(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "agg.db")
    ops, sales, _ = _controllers(store)
    ops.add_fact(FACT, id="f1")
    sales.add_fact("Sales closes the quarter on Friday.", id="f2")
    s = ops.create_session("s")
    s.add_message_sync("user", "Friday deliveries to the Berlin warehouse need a slot.")
    result = asyncio.run(ops.aggregate_context(None, QUESTION, 300))
    l3 = [it for it in result.report.items if it.source == "L3_agent"]
    assert [it.id for it in l3] == ["L3/-/f1"]
    assert l3[0].included
    without = asyncio.run(ops.aggregate_context(None, QUESTION, 300,
                                                include_agent_memory=False))
    assert all(it.source != "L3_agent" for it in without.report.items)
    store.close()


def test_a_turn_build_recalls_the_agent_memory_by_the_users_message(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "turn.db")
    ops, sales, _ = _controllers(store)
    ops.add_fact(FACT, id="f1")
    for c in (ops, sales):
        s = c.create_session("chat")
        s.add_message_sync("user", QUESTION)
        result = s.build_sync(max_tokens=500)  # a turn: no separate query
        l3 = [it.id for it in result.report.items if it.source == "L3_agent" and it.included]
        assert l3 == (["L3/-/f1"] if c is ops else [])
    store.close()
