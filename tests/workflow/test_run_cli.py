"""``loomctx workspace run`` against a fake endpoint over real HTTP, in both wire formats.

The fake server answers by the tools each request offers (:class:`ToolFollower`): the concierge
dispatches the task, the orchestrator calls each action once and then ends, and every action
writes a note. Every request it received must be valid for its format and within the budget of
the role that sent it; ``workspace show --contexts`` then prints each call's role and report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from loomctx import check_request
from loomctx.cli.main import main
from loomctx.stores import Scope, SQLiteStore
from loomctx.testing import FakeModelServer, ToolFollower
from loomctx.tokens import ChatCounter, counter_for_model
from loomctx.workflow import TeamOptions
from loomctx.workflow.record import load_calls
from loomctx.workspace import WorkSpace

TASK = "Plan a short campaign for a cold-brew oolong: research it, then find one hitpoint."
BUDGETS = {"concierge": TeamOptions().concierge_budget,
           "orchestrator": TeamOptions().orchestrator_budget,
           "action": TeamOptions().action_budget}


def _role(body: dict[str, Any]) -> str:
    """Which role sent a request, by the tools it offered."""
    tools = body.get("tools") or []
    names = {t.get("name") or t["function"]["name"] for t in tools}
    return "concierge" if "dispatch_task" in names else "orchestrator" if names else "action"


def _run(server: FakeModelServer, provider: str, db: Path, *extra: str) -> int:
    url = server.url + ("/v1" if provider == "openai" else "")
    return main(["workspace", "run", TASK, "--base-url", url, "--model", "fake-model",
                 "--provider", provider, "--db", str(db), "--session", "s1",
                 "--actions", "websearch,knowledge,hitpoint", "--retries", "0",
                 "--count-as", "cl100k_base", *extra])


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_run_drives_the_team_to_a_saved_workspace(
        provider: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "tea.md").write_text("Step one of tea knowledge: oolong cold brew keeps its "
                               "sweetness without sugar.\n\nGlass bottles read as premium.",
                               encoding="utf-8")
    (kb / "other.md").write_text("Shipping rates for pallets.", encoding="utf-8")
    db = tmp_path / "loomi.db"
    with FakeModelServer(respond=ToolFollower()) as server:
        assert _run(server, provider, db, "--knowledge", str(kb)) == 0
        requests = list(server.requests)
    out = capsys.readouterr().out
    assert "(the orchestrator is running...)" in out

    ws = WorkSpace.load(SQLiteStore(db), Scope(agent="loomi", session="s1"))
    assert list(ws.notes) == ["websearch1", "knowledge1", "hitpoint1"]
    assert {n.source for n in ws} == {"websearch", "knowledge", "hitpoint"}

    path = "/v1/messages" if provider == "anthropic" else "/v1/chat/completions"
    counter = ChatCounter(counter_for_model("cl100k_base").counter, provider)  # type: ignore[arg-type]
    roles = []
    for r in requests:
        assert r.path == path
        body = dict(r.body)
        payload = {k: v for k, v in body.items() if k not in ("model", "max_tokens")}
        assert check_request(provider, payload) == []
        role = _role(body)
        roles.append(role)
        assert counter.messages(body["messages"], body.get("tools"),
                                system=body.get("system")) <= BUDGETS[role]
    assert roles.count("action") == 3 and roles.count("orchestrator") == 4
    assert roles.count("concierge") == 3  # dispatch, answer at once, report at the end

    # the knowledge action was given the folder's passages, tagged with their file
    knowledge = next(r.body for r in requests if _role(r.body) == "action"
                     and "Do the knowledge step" in str(r.body))
    assert "[来源: tea.md#0]" in str(knowledge) and "pallets" not in str(knowledge)
    # per-action settings: thinking as the provider takes it, or dropped with a note
    hitpoint = next(r.body for r in requests if "Do the hitpoint step" in str(r.body)
                    and _role(r.body) == "action")
    if provider == "anthropic":
        assert hitpoint["thinking"] == {"type": "enabled", "budget_tokens": 1200}
        assert "temperature" not in hitpoint
        assert "note: thinking_budget 500 raised to 1024: Anthropic's minimum" in out
    else:
        assert hitpoint["temperature"] == 0.6 and "thinking" not in hitpoint
        assert "note: thinking_budget 1200 not sent" in out
    assert hitpoint["max_tokens"] == 8000

    assert main(["workspace", "show", "--db", str(db), "--session", "s1", "--contexts"]) == 0
    shown = capsys.readouterr().out
    assert "contexts: 10 model calls" in shown
    assert f"#1 concierge ({provider}):" in shown
    assert f"orchestrator ({provider}):" in shown
    assert f"action hitpoint ({provider}):" in shown
    assert "expanded: @websearch1 @knowledge1" in shown
    assert shown.count("; report: ") == 10
    calls = load_calls(SQLiteStore(db), Scope(agent="loomi", session="s1"))
    assert [c["tokens"] <= c["budget"] for c in calls] == [True] * 10


def test_a_second_run_continues_the_session(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "loomi.db"
    for _ in range(2):
        with FakeModelServer(respond=ToolFollower()) as server:
            assert _run(server, "openai", db) == 0
    capsys.readouterr()
    ws = WorkSpace.load(SQLiteStore(db), Scope(agent="loomi", session="s1"))
    assert "websearch2" in ws.notes
    assert len(load_calls(SQLiteStore(db), Scope(agent="loomi", session="s1"))) == 20


@pytest.mark.parametrize("extra, message", [
    (["--base-url", "localhost:8000"], "is not an http(s) URL"),
    (["--api-key-env", "LOOMCTX_TEST_NO_SUCH_VAR"], "unset or empty"),
    (["--knowledge", "/no/such/folder"], "does not exist"),
    (["--actions", "websearch,,x y"], "comma-separated"),
    (["--actions", "websearch", "--knowledge", "."], "not in --actions"),
    (["--model", "my-local-model"], "pass --count-as"),
    (["--count-as", "no-such-tokenizer"], "--count-as 'no-such-tokenizer' has no tokenizer"),
])
def test_bad_flags_are_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       extra: list[str], message: str) -> None:
    argv = ["workspace", "run", TASK, "--base-url", "http://127.0.0.1:9/v1", "--model",
            "gpt-4o", "--db", str(tmp_path / "x.db"), "--session", "s", "--retries", "0",
            *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_an_unreachable_endpoint_is_one_line_exit_2(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    with FakeModelServer() as server:
        url = server.url  # a port nothing listens on once the server is closed
    argv = ["workspace", "run", TASK, "--base-url", url + "/v1", "--model", "gpt-4o",
            "--db", str(tmp_path / "x.db"), "--session", "s", "--retries", "0"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("loomctx: error: ") and err.count("\n") == 1


def test_show_html_writes_every_call_escaped(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "loomi.db"
    with FakeModelServer(respond=ToolFollower()) as server:
        assert _run(server, "anthropic", db) == 0
    page = tmp_path / "calls.html"
    assert main(["workspace", "show", "--db", str(db), "--session", "s1", "--html",
                 str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert html.count('<tr data-call="') == 10
    assert "action · hitpoint" in html and "@websearch1 @knowledge1" in html
    assert 'src="http' not in html and "<details><summary>context</summary>" in html
    assert "Do the hitpoint step from @websearch1 @knowledge1." in html
    capsys.readouterr()
    assert main(["workspace", "show", "--db", str(db), "--session", "s1", "--html",
                 str(tmp_path / "no" / "such" / "x.html")]) == 2
    assert "existing folder" in capsys.readouterr().err


def test_labels_follow_the_task_language(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "loomi.db"
    with FakeModelServer(respond=ToolFollower()) as server:
        url = server.url + "/v1"
        assert main(["workspace", "run", "为新款冷泡乌龙茶策划一个小红书推广方案", "--base-url",
                     url, "--model", "gpt-4o", "--db", str(db), "--session", "zh",
                     "--actions", "websearch", "--retries", "0"]) == 0
        bodies = [str(r.body) for r in server.requests]
    capsys.readouterr()
    assert any("[任务指令]" in b for b in bodies)
    assert any("命令执行状态" in b for b in bodies)
    assert not any("[Instruction]" in b for b in bodies)
