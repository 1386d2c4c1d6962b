"""Limits end a run with a reason (never an exception); cancellation leaves a valid session."""

from __future__ import annotations

import asyncio

import pytest

from loomctx import AgentLimits, ConfigError, ModelResponse, Usage, check_request
from loomctx.testing import ToolCall


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def _always_tools(n: int) -> list:
    return [ToolCall(name="lookup", arguments={"key": f"k{i}"}, id=f"c{i}") for i in range(n)]


def _next_build_is_valid(agent) -> dict:
    built = agent.session.build_sync(max_tokens=2000)
    assert check_request(agent.model.format, built.payload) == []
    return built.payload


def test_limits_are_validated():
    for bad in ({"max_turns": 0}, {"max_tool_calls": -1}, {"max_tokens_spent": 1.5},
                {"max_wall_time": 0}, {"max_wall_time": float("nan")}, {"max_turns": True}):
        with pytest.raises(ConfigError):
            AgentLimits(**bad)


def test_max_turns(make_agent):
    agent, model, _ = make_agent(_always_tools(5), tools=[lookup],
                                 limits=AgentLimits(max_turns=2))
    result = agent.run_sync("loop forever")
    assert result.stop == "max_turns" and result.output is None
    assert model.calls == 2 and len(result.turns) == 2 and result.tool_calls == 2
    payload = _next_build_is_valid(agent)
    assert payload["messages"][-1] == {"role": "tool", "content": "value of k1",
                                       "tool_call_id": "c1"}


def test_max_tool_calls_answers_the_rest_as_not_run(make_agent):
    agent, model, _ = make_agent([_always_tools(3)], tools=[lookup],
                                 limits=AgentLimits(max_tool_calls=2))
    result = agent.run_sync("three at once")
    assert result.stop == "max_tool_calls" and model.calls == 1
    statuses = [(o.id, o.status) for o in result.turns[0].tool_calls]
    assert statuses == [("c0", "ok"), ("c1", "ok"), ("c2", "not_run")]
    assert result.tool_calls == 2
    payload = _next_build_is_valid(agent)
    tool_msgs = [m for m in payload["messages"] if m["role"] == "tool"]
    assert tool_msgs[-1]["content"].startswith("error: not run: the limit of 2 tool calls")


def test_max_tokens_spent_counts_the_providers_usage(make_agent):
    costly = ModelResponse(message={"role": "assistant", "content": None, "tool_calls": [
        {"id": "t1", "type": "function", "function": {"name": "lookup",
                                                      "arguments": '{"key": "a"}'}}]},
        usage=Usage(prompt_tokens=900, completion_tokens=200))
    agent, model, _ = make_agent([costly, "never reached"], tools=[lookup],
                                 limits=AgentLimits(max_tokens_spent=1000))
    result = agent.run_sync("spend")
    assert result.stop == "max_tokens_spent" and model.calls == 1
    assert result.usage == Usage(prompt_tokens=900, completion_tokens=200)
    assert result.turns[0].tool_calls[0].status == "ok"  # the calls asked for still ran
    _next_build_is_valid(agent)


def test_max_wall_time_between_steps(make_agent):
    now = [0.0]

    def slow_lookup(key: str) -> str:
        """Takes a simulated minute."""
        now[0] += 61.0
        return "late"

    agent, model, _ = make_agent([ToolCall(name="slow_lookup", arguments={"key": "x"}),
                                  "never reached"], tools=[slow_lookup],
                                 limits=AgentLimits(max_wall_time=60), timer=lambda: now[0])
    result = agent.run_sync("slowly")
    assert result.stop == "max_wall_time" and model.calls == 1
    _next_build_is_valid(agent)


def test_max_wall_time_cuts_a_model_call_that_hangs(make_agent):
    async def hang(payload):
        await asyncio.Event().wait()

    agent, _model, _ = make_agent([hang], limits=AgentLimits(max_wall_time=0.5))
    result = agent.run_sync("anyone there?")
    assert (result.stop, result.turns) == ("max_wall_time", ())
    _next_build_is_valid(agent)


def test_cancelling_the_run_leaves_a_valid_session(make_agent):
    started = asyncio.Event()

    async def wait_forever(key: str) -> str:
        """Blocks until cancelled."""
        started.set()
        await asyncio.Event().wait()
        return "unreachable"

    agent, model, _ = make_agent(
        [ToolCall(name="wait_forever", arguments={"key": "k"}, id="stuck"),
         "Sorry, the lookup was interrupted."], tools=[wait_forever])

    async def scenario():
        task = asyncio.create_task(agent.run("look it up"))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        pending = (await agent.session.build(max_tokens=2000)).payload
        assert check_request("openai", pending) == []
        assert "stuck" not in str(pending)  # the unanswered call is left out
        return await agent.run("never mind, anything else?")

    result = asyncio.run(scenario())
    assert result.stop == "final"
    after = model.requests[-1]
    assert check_request("openai", after) == []
    answered = [m for m in after["messages"] if m.get("tool_call_id") == "stuck"]
    assert len(answered) == 1 and "interrupted" in answered[0]["content"]
