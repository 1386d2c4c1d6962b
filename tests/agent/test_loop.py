"""The loop: build → model → tools → results → build again, with a scripted model."""

from __future__ import annotations

import asyncio
import threading

import pytest

from loomctx import Tool, check_request
from loomctx.testing import ToolCall


def _valid(model) -> None:
    assert model.requests
    for payload in model.requests:
        assert check_request(model.format, payload) == []


def _tool_results(payload) -> dict[str, str]:
    """tool-call id → result text, for both formats."""
    out = {}
    for m in payload["messages"]:
        if m["role"] == "tool":
            out[m["tool_call_id"]] = m["content"]
        elif isinstance(m.get("content"), list):
            for b in m["content"]:
                if b.get("type") == "tool_result":
                    c = b["content"]
                    out[b["tool_use_id"]] = c if isinstance(c, str) else c[0]["text"]
    return out


def _call_ids(payload) -> list[str]:
    ids = []
    for m in payload["messages"]:
        ids += [c["id"] for c in m.get("tool_calls") or []]
        if isinstance(m.get("content"), list):
            ids += [b["id"] for b in m["content"] if b.get("type") == "tool_use"]
    return ids


def track_shipment(shipment_id: str) -> str:
    """Current status of a shipment.

    Args:
        shipment_id: The shipment's id.
    """
    return f"{shipment_id}: customs hold at Lyon"


def test_a_final_answer_in_one_call(make_agent):
    agent, model, _ = make_agent(["Hello, how can I help?"], tools=[track_shipment])
    result = agent.run_sync("Hi")
    assert (result.stop, result.output, model.calls) == ("final", "Hello, how can I help?", 1)
    assert model.requests[0]["tools"][0]["function"]["name"] == "track_shipment"
    assert model.requests[0]["messages"][-1] == {"role": "user", "content": "Hi"}
    _valid(model)


@pytest.mark.parametrize("format", ["openai", "anthropic"])
def test_tool_call_then_answer_keeps_the_call_ids(make_agent, format):
    agent, model, _ = make_agent([
        ToolCall(name="track_shipment", arguments={"shipment_id": "SHP-7"}, id="toolu_01AbC"),
        "It is on customs hold at Lyon."], tools=[track_shipment], format=format)
    result = agent.run_sync("Where is SHP-7?")
    assert result.stop == "final" and result.output == "It is on customs hold at Lyon."
    assert [o.id for o in result.turns[0].tool_calls] == ["toolu_01AbC"]
    second = model.requests[1]
    assert _call_ids(second) == ["toolu_01AbC"]
    assert _tool_results(second) == {"toolu_01AbC": "SHP-7: customs hold at Lyon"}
    _valid(model)
    for rec in result.turns:
        assert rec.tokens <= rec.budget == 2000


def test_parallel_tool_calls_run_concurrently(make_agent):
    """Each tool waits for the other to start: run one after the other, both would time out."""
    ping_started, pong_started = asyncio.Event(), asyncio.Event()
    barrier = threading.Barrier(2, timeout=5)

    async def ping() -> str:
        """Ping."""
        ping_started.set()
        await pong_started.wait()
        return "ping saw pong"

    async def pong() -> str:
        """Pong."""
        pong_started.set()
        await ping_started.wait()
        return "pong saw ping"

    def left() -> str:
        """Left (sync)."""
        barrier.wait()
        return "left met right"

    def right() -> str:
        """Right (sync)."""
        barrier.wait()
        return "right met left"

    agent, model, _ = make_agent([
        [ToolCall(name=n, id=f"c_{n}") for n in ("ping", "pong", "left", "right")], "done"],
        tools=[ping, pong, left, right], tool_timeout=5)
    result = asyncio.run(agent.run("go"))
    assert {o.id: o.content for o in result.turns[0].tool_calls} == {
        "c_ping": "ping saw pong", "c_pong": "pong saw ping",
        "c_left": "left met right", "c_right": "right met left"}
    assert list(_tool_results(model.requests[1])) == ["c_ping", "c_pong", "c_left", "c_right"]
    _valid(model)


def test_failures_are_results_the_model_reads_and_the_loop_goes_on(make_agent):
    def explode(reason: str) -> str:
        """Fails."""
        raise RuntimeError(reason)

    async def hang() -> str:
        """Never returns."""
        await asyncio.Event().wait()
        return "unreachable"

    agent, model, _ = make_agent([
        [ToolCall(name="explode", arguments={"reason": "disk full"}, id="a"),
         ToolCall(name="hang", id="b"), ToolCall(name="teleport", id="c"),
         ToolCall(name="track_shipment", arguments="{oops", id="d")],
        "I could not do it."],
        tools=[explode, Tool.from_function(hang, timeout=0.05), track_shipment])
    result = agent.run_sync("try everything")
    assert result.stop == "final" and model.calls == 2
    seen = _tool_results(model.requests[1])
    assert seen["a"] == "error: RuntimeError: disk full"
    assert seen["b"].startswith("error: tool 'hang' timed out")
    assert seen["c"].startswith("error: unknown tool 'teleport'")
    assert seen["d"].startswith("error: the arguments are not valid JSON")
    assert [o.status for o in result.turns[0].tool_calls] == ["error", "timeout", "error",
                                                               "error"]
    _valid(model)


def test_events_of_a_tool_round_in_order(make_agent):
    agent, _, sink = make_agent([ToolCall(name="track_shipment",
                                          arguments={"shipment_id": "S1"}, id="x"), "ok"],
                                tools=[track_shipment])
    agent.run_sync("where?")
    loop_kinds = {"turn_started", "context_rebuilt", "model_called", "tool_started",
                  "tool_finished"}
    kinds = [e.kind for e in sink.events if e.kind in loop_kinds]
    assert kinds == ["turn_started", "context_rebuilt", "model_called", "tool_started",
                     "tool_finished", "turn_started", "context_rebuilt", "model_called"]
    called = sink.of("model_called")
    assert [e.turn for e in called] == [0, 1] and called[0].tool_calls == 1
    assert called[0].prompt_tokens > 0 and called[0].predicted_tokens > 0
    finished = sink.of("tool_finished")[0]
    assert (finished.call_id, finished.name, finished.status) == ("x", "track_shipment", "ok")
    rebuilt = sink.of("context_rebuilt")
    assert rebuilt[1].report.budget == 2000 and rebuilt[1].reason == "turn"
    assert all(e.version == 1 for e in sink.events)


def test_run_sync_works_inside_a_running_loop(make_agent):
    agent, model, _ = make_agent(["fine"])

    async def main():
        return agent.run_sync("inside a loop")

    assert asyncio.run(main()).output == "fine"
    assert model.calls == 1


def test_an_existing_session_must_know_the_tools(make_agent):
    from loomctx import ConfigError, Session, ToolRegistry
    from loomctx.agent import Agent
    from loomctx.testing import HashingEmbedder, ScriptedModel

    model = ScriptedModel(["ok"])
    bare = Session(model="gpt-4o", embedder=HashingEmbedder(dim=64))
    with pytest.raises(ConfigError, match="track_shipment"):
        Agent(model, tools=[track_shipment], session=bare)
    ready = Session(model="gpt-4o", embedder=HashingEmbedder(dim=64),
                    tools=ToolRegistry([track_shipment]).schemas)
    agent = Agent(model, tools=[track_shipment], session=ready, budget=1000)
    assert agent.run_sync("hi").output == "ok"
    with pytest.raises(ConfigError, match="anthropic"):
        Agent(ScriptedModel([], format="anthropic"), session=ready)
