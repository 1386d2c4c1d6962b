"""The seed's three SQL scenarios through the Agent: the schema a call needs is in the context
the model received for that call (asserted on the recorded requests), over an in-process
scripted model and over real HTTP (the CLI against the loopback fake server)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loomctx import Agent, RecordingSink, check_request
from loomctx.cli.main import main
from loomctx.demo import SCENARIOS, create_database, sql_demo
from loomctx.testing import FakeModelServer, HashingEmbedder, Reply, ScriptedModel, ToolCall


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return create_database(tmp_path_factory.mktemp("sales") / "sales.db")


def _schema_text(doc_id: str) -> str:
    """The heading a retrieved table schema has in the context (``schema:sales``...)."""
    return "### Table " + doc_id.split(":", 1)[1]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_each_call_holds_the_schema_it_needs(scenario, db: Path) -> None:
    sink = RecordingSink()
    demo = sql_demo(scenario.question, db=db, embedder=HashingEmbedder(), events=sink)
    model = ScriptedModel(list(scenario.replies))
    result = Agent(model, tools=demo.tools.tools(), session=demo.session,
                   budget=16_000).run_sync(scenario.question)
    assert result.stop == "final"
    assert len(model.requests) == len(scenario.replies)
    reports = [e.report for e in sink.events if e.kind == "context_rebuilt"]
    assert len(reports) == len(model.requests)
    for i, (payload, report) in enumerate(zip(model.requests, reports, strict=True)):
        assert check_request("openai", payload) == []
        shown = {r.id for r in report.items if r.included}
        assert set(scenario.needs.get(i, ())) <= shown, (i, sorted(shown))
        assert not set(scenario.absent.get(i, ())) & shown, (i, sorted(shown))
        text = json.dumps(payload["messages"], ensure_ascii=False)
        for doc in scenario.needs.get(i, ()):
            if doc.startswith("schema:"):
                assert _schema_text(doc) in text  # in the request the model actually got
    # Tool calls ran against the real database and their ids survived.
    call_ids = [c["id"] for r in scenario.replies for c in r.get("tool_calls") or ()]
    stored = [m.message.get("tool_call_id") for m in demo.session.memory.history.items
              if m.role == "tool"]
    assert stored == call_ids


def test_the_cli_demo_runs_offline(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["agent", "--demo", "sql", "Total sales of the last 7 days", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["stop"] == "final" and out["model"] == "scripted"
    assert "schema:sales" in out["calls"][0]["retrieved"]


def test_the_cli_demo_talks_to_an_openai_compatible_endpoint(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    scenario = next(s for s in SCENARIOS if s.name == "return_rate")
    steps = [Reply(text=r.get("content"), tool_calls=[
        ToolCall(c["function"]["name"], c["function"]["arguments"], c["id"])
        for c in r.get("tool_calls") or ()]) for r in scenario.replies]
    with FakeModelServer(steps) as server:
        code = main(["agent", "--demo", "sql", scenario.question, "--base-url",
                     server.url + "/v1", "--model", "local-model", "--json"])
        requests = [r.body for r in server.requests]
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["model"] == "local-model" and out["stop"] == "final"
    assert [r["model"] for r in requests] == ["local-model"] * len(steps)
    # The failed SQL's error reached the model, and the next call's context holds the schema
    # of the table the fix needs (order_items), which the first call's did not.
    first, second = (json.dumps(r["messages"]) for r in requests[:2])
    table = _schema_text("schema:order_items")
    assert "error:" in second and table in second and table not in first


@pytest.mark.parametrize("argv", [
    ["agent", "--demo", "sql", "   "],
    ["agent", "--demo", "sql", "q", "--db", "/nonexistent/sales.db"],
])
def test_bad_cli_input_is_one_line_and_exit_2(argv: list[str],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("loomctx: error: ")


def test_an_undecodable_question_is_repaired_not_a_crash(capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    # argv bytes that are not UTF-8 arrive as lone surrogates (surrogateescape).
    question = b"\xff\xfe Total sales of the last 7 days".decode("utf-8", "surrogateescape")
    assert main(["agent", "--demo", "sql", question, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["stop"] == "final"


@pytest.mark.parametrize(("sql", "error"), [
    ("SELECT randomblob(10000000)", "error: a value is larger than the limit"),
    ("SELECT fts3_tokenizer('simple')", "error: the function fts3_tokenizer() is not allowed"),
])
def test_a_hostile_query_from_the_model_comes_back_as_a_short_error(
        db: Path, sql: str, error: str) -> None:
    if "randomblob" in sql and not hasattr(__import__("sqlite3").Connection, "setlimit"):
        pytest.skip("the value limit needs Python 3.11+")
    demo = sql_demo("How big can a blob be?", db=db, embedder=HashingEmbedder())
    model = ScriptedModel([{"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "run_sql", "arguments": json.dumps({"query": sql})}}]},
        {"role": "assistant", "content": "done"}])
    result = Agent(model, tools=demo.tools.tools(), session=demo.session,
                   budget=16_000).run_sync("How big can a blob be?")
    assert result.stop == "final"
    tool = next(m for m in model.requests[1]["messages"] if m.get("role") == "tool")
    assert tool["content"].startswith(error) and len(tool["content"]) < 400


def test_the_cli_shows_each_tool_result_and_a_failed_query_as_failed(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["agent", "--demo", "sql", "What is our return rate?"]) == 0
    out = capsys.readouterr().out
    guess = out.index("tool run_sql(")
    assert out[guess:].splitlines()[0].endswith(": error")
    assert "  error: no such column: order_id" in out  # the database's words, shown
    fixed = out.index("tool run_sql(", guess + 1)
    assert out[fixed:].splitlines()[0].endswith(": ok")
    value = out[fixed:].splitlines()[2].strip()  # header, then the one value
    assert float(value) > 0 and out.rstrip().endswith(f"is {value} %.")
    assert "1 of 2 tool calls failed" in out


def test_the_cli_json_records_each_tool_status_and_output(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["agent", "--demo", "sql", "What is our return rate?", "--json"]) == 0
    tools = json.loads(capsys.readouterr().out)["tool_calls"]
    assert [t["status"] for t in tools] == ["error", "ok"]
    assert tools[0]["output"].startswith("error: no such column")
    assert tools[1]["output"].startswith("return_rate_pct\n")


def test_scenario_one_runs_its_sql_and_prints_the_number(
        db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from loomctx.demo import SalesTools
    from loomctx.demo.scenarios import WEEK_SQL

    expected = SalesTools(db).run_sql(WEEK_SQL).splitlines()[1]
    assert main(["agent", "--demo", "sql", "Total sales of the last 7 days",
                 "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert f"  {expected}\n" in out
    assert out.rstrip().endswith(f"Total sales of the last 7 days: {expected} EUR.")


def test_the_seeds_chinese_question_finds_the_returns_schema_offline(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["agent", "--demo", "sql", "查询退货率", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "schema:returns" in out["calls"][0]["retrieved"]
    assert out["stop"] == "final" and [t["status"] for t in out["tool_calls"]] == ["error", "ok"]


def test_the_agent_records_a_failed_query_as_an_error(db: Path) -> None:
    from loomctx.demo.scenarios import RETURN_RATE

    demo = sql_demo(RETURN_RATE.question, db=db, embedder=HashingEmbedder())
    result = Agent(ScriptedModel(list(RETURN_RATE.replies)), tools=demo.tools.tools(),
                   session=demo.session, budget=16_000).run_sync(RETURN_RATE.question)
    (guess,), (fixed,) = (t.tool_calls for t in result.turns if t.tool_calls)
    assert (guess.status, fixed.status) == ("error", "ok")
    assert guess.content == "error: no such column: order_id"


@pytest.mark.parametrize("placement", ["first_system", "user_block"])
def test_the_cli_with_a_strict_placement_passes_a_strict_template_server(
        placement: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    scenario = next(s for s in SCENARIOS if s.name == "return_rate")
    steps = [Reply(text=r.get("content"), tool_calls=[
        ToolCall(c["function"]["name"], c["function"]["arguments"], c["id"])
        for c in r.get("tool_calls") or ()]) for r in scenario.replies]
    argv = ["agent", "--demo", "sql", scenario.question, "--model", "local-model", "--json"]
    with FakeModelServer(steps, strict_template=True) as server:
        code = main([*argv, "--base-url", server.url + "/v1", "--placement", placement])
    assert code == 0 and server.template_refusals == []
    assert json.loads(capsys.readouterr().out)["stop"] == "final"
    with FakeModelServer(steps, strict_template=True) as server:  # the default is refused
        assert main([*argv, "--base-url", server.url + "/v1"]) != 0
    assert server.template_refusals


def test_a_call_to_an_unknown_tool_is_listed_as_failed(
        capsys: pytest.CaptureFixture[str]) -> None:
    steps = [Reply(tool_calls=[ToolCall("drop_everything", "{}", "call_x")]),
             Reply(text="Sorry.")]
    with FakeModelServer(steps) as server:
        assert main(["agent", "--demo", "sql", "Drop it", "--base-url", server.url + "/v1",
                     "--json"]) == 0
    (tool,) = json.loads(capsys.readouterr().out)["tool_calls"]
    assert tool["status"] == "error" and "unknown tool" in tool["output"]
