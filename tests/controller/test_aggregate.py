"""One context over several sessions: one budget, one ranking, each item attributed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from loomctx import (
    BuildOptions,
    ConfigError,
    HashingEmbedder,
    InMemoryStore,
    SQLiteStore,
    check_request,
)
from loomctx.controller import ContextController, session_of, tokens_by_session
from loomctx.stores.protocol import MemoryStore

QUERY = "Why was the Berlin shipment delayed by the warehouse strike?"


def _fill(c: ContextController) -> None:
    """Three sessions: one about the question, one half about it, one about something else."""
    shipping, customs, lunch = (c.create_session(n) for n in ("shipping", "customs", "lunch"))
    for i in range(12):
        shipping.add_message_sync(
            "user", f"Shipment SHP-{i} to Berlin was delayed by the warehouse strike, day {i}.")
        customs.add_message_sync(
            "user", f"Customs form {i} for the Berlin warehouse was filed on time.")
        lunch.add_message_sync("user", f"Lunch menu item {i}: pasta with tomato and basil.")


@pytest.fixture(params=["memory", "sqlite"])
def controller(request: pytest.FixtureRequest, tmp_path: Path) -> ContextController:
    store: MemoryStore = (InMemoryStore() if request.param == "memory"
                          else SQLiteStore(tmp_path / "agent.db"))
    c = ContextController("ops", store=store, embedder=HashingEmbedder())
    _fill(c)
    return c


@pytest.mark.parametrize("budget", [200, 400, 900])
def test_one_budget_over_all_sessions(controller: ContextController, budget: int) -> None:
    result = asyncio.run(controller.aggregate_context(None, QUERY, budget))
    assert result.report.budget == budget
    assert result.tokens <= budget
    per_session = tokens_by_session(result.report)
    assert sum(per_session.values()) <= budget
    assert len(per_session) >= 2  # candidates of several sessions made it in


def test_the_most_relevant_session_gets_more_than_an_equal_share(
        controller: ContextController) -> None:
    budget = 300
    result = asyncio.run(controller.aggregate_context(None, QUERY, budget))
    per_session = tokens_by_session(result.report)
    included = sum(per_session.values())
    assert per_session["shipping"] > included / 3
    assert per_session["shipping"] > per_session.get("lunch", 0)


def test_every_item_is_attributed_to_its_session(controller: ContextController) -> None:
    result = asyncio.run(controller.aggregate_context(["shipping", "lunch"], QUERY, 400))
    [query] = [it for it in result.report.items if it.source == "user_input"]
    assert query.reason == "pinned"  # the question is the request's input
    items = [it for it in result.report.items if it is not query]
    assert {session_of(it.source) for it in items} == {"shipping", "lunch"}
    for it in items:
        sid = session_of(it.source)
        assert it.id.startswith(f"{sid}/")
        own = controller.sessions[sid].memory.records  # type: ignore[index]
        assert it.id.split("/", 1)[1] in own
    # The customs session was not asked for: nothing of it is a candidate.
    assert all(session_of(it.source) != "customs" for it in items)


def test_included_text_comes_from_the_named_session(controller: ContextController) -> None:
    result = asyncio.run(controller.aggregate_context(None, QUERY, 400))
    for it in result.report.items:
        if not it.included or it.source == "user_input":
            continue
        sid = session_of(it.source)
        record = controller.sessions[sid].memory.records[it.id.split("/", 1)[1]]  # type: ignore[index]
        assert record.content in result.text or record.content in str(result.messages)


def test_a_session_of_another_controller_is_refused(tmp_path: Path) -> None:
    store = InMemoryStore()
    ours = ContextController("ops", store=store, embedder=HashingEmbedder())
    theirs = ContextController("sales", store=store, embedder=HashingEmbedder())
    foreign = theirs.create_session("s1")
    with pytest.raises(ConfigError, match="not registered"):
        asyncio.run(ours.aggregate_context([foreign], QUERY, 200))
    with pytest.raises(ConfigError, match="belongs to agent 'sales'"):
        ours.register(foreign)


def test_an_empty_query_is_refused(controller: ContextController) -> None:
    with pytest.raises(ConfigError, match="non-empty query"):
        asyncio.run(controller.aggregate_context(None, "  ", 200))


def test_remember_writes_the_aggregate_to_the_agent_s_l3(controller: ContextController) -> None:
    """Seed 001's L2 → L3 step: an aggregate over sessions becomes agent memory, recalled by a
    new session of the agent; asking the same again replaces the record."""
    plain = asyncio.run(controller.aggregate_context(None, QUERY, 400, now=100.0))
    assert controller.recall(QUERY) == []  # a plain aggregate is a read
    result = asyncio.run(controller.aggregate_context(None, QUERY, 400, remember=True,
                                                      now=100.0))
    assert result.rendered.payload == plain.rendered.payload
    [rec] = controller.recall(QUERY)
    assert rec.level == "L3" and rec.session is None and rec.agent == "ops"
    assert rec.metadata["kind"] == "aggregate"
    assert rec.metadata["sessions"] == ["customs", "lunch", "shipping"]
    assert "[shipping] " in rec.content and "warehouse strike" in rec.content
    asyncio.run(controller.aggregate_context(None, QUERY, 400, remember=True, now=200.0))
    assert [r.timestamp for r in controller.recall(QUERY)] == [200.0]
    later = controller.create_session("later")
    built = later.build_sync(QUERY, max_tokens=900)
    assert any(i.source == "L3_agent" and i.included for i in built.report.items)


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "text"])
def test_fresh_sessions_alone_give_a_request_with_the_question(fmt: str) -> None:
    """The first aggregate of a new deployment: sessions with no messages yet. The question is
    the request's input, so the build is a valid request of the format, within the budget."""
    c = ContextController("ops", store=InMemoryStore(), embedder=HashingEmbedder())
    c.create_session("first")
    c.create_session("second")
    result = asyncio.run(c.aggregate_context(None, QUERY, 200,
                                             options=BuildOptions(format=fmt)))
    assert 0 < result.tokens <= 200
    assert tokens_by_session(result.report) == {}
    if fmt == "text":
        assert result.text.endswith(QUERY)
    else:
        assert check_request(fmt, result.payload) == []
        assert result.messages[-1]["role"] == "user" and QUERY in str(result.messages[-1])
