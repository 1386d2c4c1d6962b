"""The ``recall`` tool: offered when asked for, it searches the session's memory (and the
agent's earlier sessions), and its result is budgeted like any other tool result."""

from __future__ import annotations

import pytest

from loomctx import Agent, ConfigError, InMemoryStore, Session, check_request
from loomctx.agent import RECALL_TOOL, recall_tool
from loomctx.testing import HashingEmbedder, ScriptedModel, ToolCall

EARLIER = [("user", "Our Lisbon venue is Palacio Chiado, booked for March 14."),
           ("assistant", "Noted: Palacio Chiado, March 14, capped at 40,000 EUR.")]


def _tool_names(payload) -> list[str]:
    return [t["function"]["name"] for t in payload.get("tools", [])]


def _tool_result(payload) -> str:
    return next(m["content"] for m in payload["messages"] if m["role"] == "tool")


def test_not_offered_by_default(make_agent) -> None:
    agent, model, _ = make_agent(["Hello."])
    agent.run_sync("Hi")
    assert RECALL_TOOL not in _tool_names(model.requests[0])


def test_recall_finds_the_sessions_and_the_agents_memory(make_agent) -> None:
    store, embedder = InMemoryStore(), HashingEmbedder(dim=64)
    earlier = Session("earlier", agent="ops", store=store, embedder=embedder,
                      clock=lambda: 1_699_990_000.0)
    earlier.add_messages_sync([{"role": "user", "content": "The caterer is Cozinha Lumiar, "
                                "vegetarian menu for 80 guests."},
                               {"role": "assistant", "content": "Cozinha Lumiar confirmed "
                                "for 80 guests, vegetarian."}])
    earlier.end_sync()
    agent, model, _ = make_agent([
        ToolCall(name=RECALL_TOOL, arguments={"query": "Lisbon venue booked", "limit": 3}),
        ToolCall(name=RECALL_TOOL, arguments={"query": "caterer guests menu"}),
        "Palacio Chiado on March 14; Cozinha Lumiar caters."],
        recall_tool=True, store=store, agent="ops")
    agent.session.add_messages_sync([{"role": r, "content": c} for r, c in EARLIER])
    result = agent.run_sync("Remind me of the venue and the caterer.")
    assert result.stop == "final"
    assert RECALL_TOOL in _tool_names(model.requests[0])
    # The results reached the next request, as tool results.
    assert "Palacio Chiado" in _tool_result(model.requests[1])
    second = [m["content"] for m in model.requests[2]["messages"] if m["role"] == "tool"]
    assert "Cozinha Lumiar" in second[-1] and "memory:L3" in second[-1]
    for payload in model.requests:
        assert check_request("openai", payload) == []


def test_its_results_are_budgeted_like_any_tool_result(make_agent) -> None:
    agent, model, _ = make_agent([
        ToolCall(name=RECALL_TOOL, arguments={"query": "shipment status", "limit": 20}),
        "Done."], recall_tool=True, budget=700)
    agent.session.add_messages_sync([
        {"role": "user" if i % 2 == 0 else "assistant",
         "content": f"Shipment SHP-{i} status: held at customs in Lyon awaiting the "
                    f"paperwork for pallet group {i}, which the broker promised by Friday."}
        for i in range(40)])
    result = agent.run_sync("What is the shipment status overall?")
    full = result.turns[0].tool_calls[0].content
    assert full.count("SHP-") >= 10
    for rec in result.turns:
        assert rec.tokens <= rec.budget == 700
    sent = _tool_result(model.requests[1])
    assert len(sent) < len(full)  # clipped in the window, as any large tool result
    assert check_request("openai", model.requests[1]) == []


def test_a_given_session_must_show_it(embedder) -> None:
    model = ScriptedModel(["ok"], model="gpt-4o")
    plain = Session(embedder=embedder)
    with pytest.raises(ConfigError, match="recall_tool"):
        Agent(model, session=plain, recall_tool=True)
    shown = Session(embedder=embedder, tools=[recall_tool(None).schema])
    assert Agent(model, session=shown, recall_tool=True).recall_tool
