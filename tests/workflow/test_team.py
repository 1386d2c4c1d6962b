"""The team's own rules: observe/think parsing, the quota, the dispatch limit, rounds, errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loomctx._sync import run_sync
from loomctx.errors import BudgetError, ConfigError
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
