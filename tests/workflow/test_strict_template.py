"""The team on a strict chat template (vLLM, llama.cpp, TGI serving open models).

Such a server takes one system message, first, and alternating user/assistant turns, and answers
anything else with HTTP 400; ``FakeModelServer(strict_template=True)`` does the same, over real
HTTP, for OpenAI requests and for Anthropic ones laid out as the template sees them. The team's
requests are built with ``TeamOptions.placement`` (``workspace run --placement``), and under a
strict placement each is checked against the template's rules before it is sent.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest

from loomctx import check_request
from loomctx.builder import BuildResult
from loomctx.cli.main import main
from loomctx.errors import ConfigError, InvalidRequestError, ModelError
from loomctx.models.anthropic import AnthropicChatModel
from loomctx.models.openai import OpenAIChatModel
from loomctx.stores import Scope, SQLiteStore
from loomctx.testing import FakeModelServer, ToolFollower
from loomctx.testing.strict_template import request_template_problems
from loomctx.workflow import TeamOptions
from loomctx.workflow.calls import call_role
from loomctx.workspace import (
    ConversationManager,
    ModelSettings,
    WorkSpace,
    build_orchestrator_context,
)

TASK = "Plan a short campaign for a cold-brew oolong: research it, then find one hitpoint."


def _run(server: FakeModelServer, provider: str, db: Path, *extra: str) -> int:
    url = server.url + ("/v1" if provider == "openai" else "")
    return main(["workspace", "run", TASK, "--base-url", url, "--model", "fake-model",
                 "--provider", provider, "--db", str(db), "--session", "s1",
                 "--actions", "websearch,knowledge,hitpoint", "--retries", "0",
                 "--count-as", "cl100k_base", *extra])


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_whole_run_passes_a_strict_template_server(
        provider: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "tea.md").write_text("Step one of tea knowledge: oolong cold brew keeps its "
                               "sweetness without sugar.", encoding="utf-8")
    db = tmp_path / "loomi.db"
    with FakeModelServer(respond=ToolFollower(), strict_template=True) as server:
        code = _run(server, provider, db, "--knowledge", str(kb))
        requests = list(server.requests)
        refusals = list(server.template_refusals)
    out = capsys.readouterr()
    assert code == 0, out.err
    assert refusals == []
    assert len(requests) == 10  # concierge 3, orchestrator 4, actions 3
    for r in requests:
        assert request_template_problems(provider, r.body) == []
    ws = WorkSpace.load(SQLiteStore(db), Scope(agent="loomi", session="s1"))
    assert list(ws.notes) == ["websearch1", "knowledge1", "hitpoint1"]
    assert "10 model calls" in out.out and "3 notes; saved to" in out.out
    # the knowledge passages (the turn's evidence) went into the user's turn
    knowledge = next(r.body for r in requests if "Do the knowledge step" in str(r.body))
    assert "[来源: tea.md#0]" in str(knowledge["messages"][-1])


def test_the_placement_flag_reaches_every_request(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeModelServer(respond=ToolFollower()) as server:
        assert _run(server, "openai", tmp_path / "a.db", "--placement", "system") == 0
        mid_system = [r for r in server.requests
                      if [m["role"] for m in r.body["messages"]].count("system") > 1]
    assert mid_system  # "system" keeps the turn's state a system message before the input
    with FakeModelServer(respond=ToolFollower(), strict_template=True) as server:
        assert _run(server, "openai", tmp_path / "b.db", "--placement", "first_system") == 0
        assert server.template_refusals == []
        assert all([m["role"] for m in r.body["messages"]][1:].count("system") == 0
                   for r in server.requests)
    with FakeModelServer(respond=ToolFollower(), strict_template=True) as server:
        assert _run(server, "openai", tmp_path / "c.db", "--placement", "system") == 2
    err = capsys.readouterr().err
    assert "a system message after the first message" in err and err.count("\n") == 1
    with pytest.raises(SystemExit) as exit_:
        main(["workspace", "run", TASK, "--base-url", "http://127.0.0.1:9/v1", "--model",
              "gpt-4o", "--db", str(tmp_path / "d.db"), "--session", "s",
              "--placement", "middle"])
    assert exit_.value.code == 2
    assert "invalid choice: 'middle'" in capsys.readouterr().err


def test_team_options_refuse_an_unknown_placement() -> None:
    with pytest.raises(ConfigError, match=r"TeamOptions\.placement must be one of"):
        TeamOptions(placement="middle")  # type: ignore[arg-type]
    assert TeamOptions().placement == "user_block"


def test_a_request_that_breaks_the_template_never_leaves() -> None:
    """A build laid out with system messages mid-conversation, sent under a strict placement:
    the check refuses it before any byte reaches the server."""
    ws, conv = WorkSpace(), ConversationManager()
    settings = ModelSettings(temperature=0.5, max_output_tokens=100)
    with FakeModelServer(["never sent"], strict_template=True) as server:
        model = OpenAIChatModel("gpt-4o", base_url=server.url + "/v1", max_retries=0)
        with pytest.raises(InvalidRequestError, match="a system message after the first"):
            asyncio.run(call_role(
                "orchestrator", model,
                lambda b: build_orchestrator_context(
                    "research", ws, conv, budget=b, format="openai", placement="system",
                    instructions="You plan."),
                budget=4000, settings=settings, placement="user_block"))
        assert server.requests == []
        # the same build laid out as its placement promises is sent, and the server takes it
        record, _ = asyncio.run(call_role(
            "orchestrator", model,
            lambda b: build_orchestrator_context(
                "research", ws, conv, budget=b, format="openai", placement="user_block",
                instructions="You plan."),
            budget=4000, settings=settings, placement="user_block"))
        assert server.template_refusals == [] and len(server.requests) == 1
        assert [m["role"] for m in record.payload["messages"]] == ["system", "user"]


def test_an_anthropic_request_the_template_refuses_never_leaves() -> None:
    """Anthropic requests are checked as the template lays them out: text after a tool result
    in the same user turn is valid for the Messages API, but the template sees a user message
    right after a tool message."""
    ws, conv = WorkSpace(), ConversationManager()
    settings = ModelSettings(temperature=0.5, max_output_tokens=100)
    after = [{"role": "assistant", "content": [
                 {"type": "tool_use", "id": "t1", "name": "websearch", "input": {}}]},
             {"role": "user", "content": [
                 {"type": "tool_result", "tool_use_id": "t1", "content": "found"},
                 {"type": "text", "text": "and the turn's context after it"}]}]

    def build(budget: int) -> BuildResult:
        result = build_orchestrator_context("research", ws, conv, budget=budget - 100,
                                            format="anthropic", instructions="You plan.")
        payload = {**result.payload, "messages": [*result.payload["messages"], *after]}
        assert check_request("anthropic", payload) == []  # the Messages API takes it
        return replace(result, rendered=replace(result.rendered, payload=payload))

    with FakeModelServer(["never sent"], strict_template=True) as server:
        model = AnthropicChatModel("claude-sonnet-4", base_url=server.url, max_retries=0)
        with pytest.raises(InvalidRequestError, match="user after tool"):
            asyncio.run(call_role("orchestrator", model, build, budget=4000,
                                  settings=settings, placement="user_block"))
        assert server.requests == []
        with pytest.raises(ModelError, match="HTTP 400: chat template error"):  # unchecked
            asyncio.run(call_role("orchestrator", model, build, budget=4000,
                                  settings=settings, placement="system"))
        assert len(server.template_refusals) == 1
