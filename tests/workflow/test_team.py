"""The team's own rules: observe/think parsing, the quota, the dispatch limit, rounds, errors."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from loomctx import check_request
from loomctx._sync import run_sync
from loomctx.errors import BudgetError, ConfigError
from loomctx.models.protocol import ModelResponse
from loomctx.testing import ScriptedModel
from loomctx.workflow import Team, TeamOptions, observe_think
from loomctx.workspace import Labels, Quota, RoleOptions


def calls(*pairs: tuple[str, str], content: str = "") -> dict[str, Any]:
    return {"content": content, "tool_calls": [
        {"id": f"c{i}", "type": "function",
         "function": {"name": name, "arguments": json.dumps({"instruction": text})}}
        for i, (name, text) in enumerate(pairs)]}


def dispatch(task: str, cid: str = "d") -> dict[str, Any]:
    return {"content": None, "tool_calls": [{"id": cid, "type": "function", "function": {
        "name": "dispatch_task", "arguments": json.dumps({"task": task})}}]}


def test_observe_think_in_english_and_chinese() -> None:
    assert observe_think("Observe: two notes\nmore\nThink: write") == ("two notes\nmore", "write")
    assert observe_think("观察：已有素材\n思考: 先写") == ("已有素材", "先写")
    assert observe_think("just a plan") == ("", "just a plan")


def test_commands_past_the_quota_are_not_run() -> None:
    options = TeamOptions(roles=RoleOptions(quota=Quota(base=2, per_feedback=1)))
    orch = ScriptedModel([calls(("websearch", "a"), ("websearch", "b"), ("websearch", "c")),
                          "done"])
    action = ScriptedModel(["one", "two", "three"])
    team = Team(concierge=ScriptedModel([]), orchestrator=orch, action=action, options=options)
    response = _run(team.run_task("search"))
    assert [a.instruction for a in team.conversation.execution_log()] == ["a", "b"]
    assert action.calls == 2 and list(team.workspace.notes) == ["websearch1", "websearch2"]
    assert Labels.english().quota.format(executed=2, max=2, remaining=0) in _text(
        orch.requests[1])
    assert response.startswith("done") and "@websearch2" in response


def test_the_concierge_dispatches_at_most_max_dispatches() -> None:
    concierge = ScriptedModel([dispatch("t1"), dispatch("t2", "d2"), "ok", "made nothing"])
    orch = ScriptedModel(["nothing to do"])
    team = Team(concierge=concierge, orchestrator=orch, action=ScriptedModel([]))
    assert team.chat_sync("hi") == "ok"
    assert len(team.conversation.calls) == 1 and orch.calls == 1
    last = concierge.requests[2]["messages"]
    assert last[-1]["role"] == "tool" and last[-1]["content"].startswith("not run")
    assert last[-3]["role"] == "tool" and last[-3]["content"].startswith("started")
    # the orchestrator's outcome came back to the concierge, which told the user
    assert "nothing to do" in _text(concierge.requests[3])
    assert team.reports == ["made nothing"]
    assert team.conversation.history[-1].content == "made nothing"


def test_rounds_stop_at_max_rounds_and_unknown_tools_do_nothing() -> None:
    orch = ScriptedModel([calls(("no_such_action", "x")), calls(("no_such_action", "y"))])
    team = Team(concierge=ScriptedModel([]), orchestrator=orch, action=ScriptedModel([]),
                options=TeamOptions(max_rounds=2))
    response = _run(team.run_task("t"))
    assert response.startswith("stopped after 2 rounds")
    call = team.conversation.calls[0]
    assert len(call.execution_records) == 2 and call.actions() == []


def test_per_action_models() -> None:
    search, writer = ScriptedModel(["found"]), ScriptedModel(["post"])
    team = Team(concierge=ScriptedModel([]), orchestrator=ScriptedModel([]),
                action={"websearch": search, "*": writer})
    assert _run(team.run_action("websearch", "go")) == ["websearch1"]
    assert _run(team.run_action("xhs_post", "write")) == ["xhs1"]
    assert search.calls == writer.calls == 1


def test_bad_configuration_is_refused() -> None:
    with pytest.raises(ConfigError, match="'text' requests"):
        Team(concierge=ScriptedModel([], format="text"), orchestrator=ScriptedModel([]),
             action=ScriptedModel([]))
    with pytest.raises(ConfigError, match="lookups"):
        Team(concierge=ScriptedModel([]), orchestrator=ScriptedModel([]),
             action=ScriptedModel([]), lookups={"nope": lambda s: s})
    with pytest.raises(ConfigError, match="language"):
        TeamOptions(language="fr")
    with pytest.raises(ConfigError, match="no model for the actions"):
        Team(concierge=ScriptedModel([]), orchestrator=ScriptedModel([]),
             action={"websearch": ScriptedModel([])})
    with pytest.raises(ConfigError, match="max_rounds"):
        TeamOptions(max_rounds=0)


def test_a_budget_smaller_than_the_tools_is_a_budget_error() -> None:
    team = Team(concierge=ScriptedModel([]), orchestrator=ScriptedModel(["x"]),
                action=ScriptedModel([]), options=TeamOptions(orchestrator_budget=50))
    with pytest.raises(BudgetError, match="orchestrator budget 50"):
        _run(team.run_task("t"))


def _run(coro: Any) -> Any:
    return run_sync(coro, name="test")


def _text(payload: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in payload["messages"]
                     if isinstance(m.get("content"), str))


class Gated:
    """A model whose every call waits for ``gate``: an orchestrator as slow as a test wants."""

    format = "openai"
    model = "gpt-4o"

    def __init__(self, reply: str) -> None:
        self.gate = asyncio.Event()
        self.started = asyncio.Event()
        self.reply = reply

    async def complete(self, payload: Any, *, max_tokens: int | None = None) -> ModelResponse:
        self.started.set()
        await self.gate.wait()
        return ModelResponse(message={"role": "assistant", "content": self.reply})

    def stream(self, payload: Any, *, max_tokens: int | None = None) -> Any:
        raise NotImplementedError


def test_the_concierge_answers_while_the_orchestrator_runs() -> None:
    async def scenario() -> None:
        concierge = ScriptedModel([dispatch("write a post"), "started it",
                                   "still working on it", "the post is done"])
        orch = Gated("all done")
        team = Team(concierge=concierge, orchestrator=orch, action=ScriptedModel([]))
        # a chat that waited for the orchestrator would never return: the gate is shut
        assert await asyncio.wait_for(team.chat("write me a post"), 30) == "started it"
        await orch.started.wait()  # the orchestrator's first call is in flight
        assert team.running and team.conversation.running == 0
        # a message during the run: answered now, with the running state in the context
        assert await team.chat("how is it going?") == "still working on it"
        during = _text(concierge.requests[2])
        assert Labels.english().running.format(task="write a post", executed=0) in during
        assert orch.gate.is_set() is False
        orch.gate.set()
        assert await team.wait() == "the post is done"
        assert not team.running and team.conversation.running is None
        after = _text(concierge.requests[3])
        assert Labels.english().finished in after and "all done" in after
        assert "[Orchestrator running]" not in after
        assert [e.type for e in team.conversation.history] == [
            "user", "orchestrator", "concierge", "user", "concierge", "orchestrator_response",
            "concierge"]
        assert await team.wait() is None
    _run(scenario())


def test_a_second_dispatch_while_running_is_not_run() -> None:
    async def scenario() -> None:
        concierge = ScriptedModel([dispatch("t1"), "ok", dispatch("t2", "d2"), "busy",
                                   "report"])
        orch = Gated("done")
        team = Team(concierge=concierge, orchestrator=orch, action=ScriptedModel([]))
        await asyncio.wait_for(team.chat("one"), 30)  # returns while the orchestrator waits
        await orch.started.wait()
        assert await team.chat("two") == "busy"
        tool = concierge.requests[3]["messages"][-1]
        assert tool["content"].startswith("not run: the orchestrator is still working")
        orch.gate.set()
        await team.wait()
        assert len(team.conversation.calls) == 1
    _run(scenario())


def test_stop_cancels_the_background_call() -> None:
    async def scenario() -> None:
        orch = Gated("never")
        team = Team(concierge=ScriptedModel([dispatch("t"), "ok"]), orchestrator=orch,
                    action=ScriptedModel([]))
        await asyncio.wait_for(team.chat("go"), 30)
        await orch.started.wait()
        await team.stop()
        assert not team.running and team.conversation.running is None
        assert await team.wait() is None
    _run(scenario())


def test_lookups_feed_the_action_and_failures_are_told() -> None:
    seen: list[str] = []

    def search(instruction: str) -> str:
        seen.append(instruction)
        return "cold brew is up 40% this summer"

    async def broken(instruction: str) -> str:
        raise RuntimeError("search backend down")

    action = ScriptedModel(["summary", "nothing found"])
    team = Team(concierge=ScriptedModel([]), orchestrator=ScriptedModel([]), action=action,
                lookups={"websearch": search, "knowledge": broken})
    assert _run(team.run_action("websearch", "tea trends")) == ["websearch1"]
    assert seen == ["tea trends"]
    assert "[Search results]\ncold brew is up 40% this summer" in _text(action.requests[0])
    assert _run(team.run_action("knowledge", "brand facts")) == ["knowledge1"]
    assert ("(the knowledge lookup failed: RuntimeError: search backend down)"
            in _text(action.requests[1]))
    # an action without a lookup is the model alone
    team2 = Team(concierge=ScriptedModel([]), orchestrator=ScriptedModel([]),
                 action=ScriptedModel(["x"]))
    _run(team2.run_action("websearch", "tea"))
    plain = team2.action_models["*"]
    assert isinstance(plain, ScriptedModel)
    assert "[Search results]" not in _text(plain.requests[0])


def test_an_anthropic_team_sends_messages_requests() -> None:
    concierge = ScriptedModel([dispatch("write"), "on it", "done"], format="anthropic")
    orch = ScriptedModel([calls(("xhs_post", "write from @material1"), content="Think: go"),
                          "finished"], format="anthropic")
    action = ScriptedModel(["the post"], format="anthropic")
    team = Team(concierge=concierge, orchestrator=orch, action=action)
    team.chat_sync("make a post", attachments=["brief"])
    assert list(team.workspace.notes) == ["material1", "xhs1"]
    for record in team.calls:
        assert record.format == "anthropic"
        assert check_request("anthropic", record.payload) == []
        assert "system" in record.payload
    exchange = concierge.requests[1]["messages"][-2:]
    assert exchange[0]["role"] == "assistant"
    assert exchange[0]["content"][0]["type"] == "tool_use"
    assert exchange[1]["content"][0]["type"] == "tool_result"
    assert {t["name"] for t in orch.requests[0]["tools"]} >= {"xhs_post", "websearch"}
    post = action.requests[0]
    assert post["thinking"] == {"type": "enabled", "budget_tokens": 1200}
    assert "temperature" not in post
    rec = next(r for r in team.calls if r.role == "action")
    assert rec.expanded == ["material1"]
    assert rec.notes == ("temperature 0.6 not sent: Anthropic takes no temperature but 1 "
                         "while thinking",)
