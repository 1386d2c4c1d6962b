"""The seed's three SQL scenarios, played turn by turn through a Session as an agent loop would.

Each model call is simulated: build, take the scripted reply, run its tool calls with the real
tools over the generated database, add the results, build again. The assertions are on what each
built request holds: the schema a call needs is in that call's context (and not before, where
the scenario says so), the static part is byte-identical on every call, the retrieved block sits
after the history, and every request passes the provider's structural check.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from loomctx import check_request
from loomctx.builder import BuildOptions, BuildResult
from loomctx.demo import SCENARIOS, TOOL_SCHEMAS, SalesTools, Scenario, SchemaRetriever
from loomctx.demo.sales import create_database
from loomctx.demo.scenarios import PURCHASE_BEHAVIOUR, RETURN_RATE, TOTAL_SALES, WEEK_SQL
from loomctx.retrieval.dynamic import Assembly, DynamicContextSource
from loomctx.retrieval.task import TaskContextSource
from loomctx.session import Session

BUDGET = 16_000
SHARE = 0.25  # the seed's 4,000 of 16,000


@dataclass
class Call:
    """One simulated model call: the request it was shown and what the block assembled."""

    result: BuildResult
    assembly: Assembly
    tool_results: list[str] = field(default_factory=list)

    def holds(self, doc_id: str) -> bool:
        """Included by the build report and present in the request's text."""
        rows = [r for r in self.result.report.items if r.id == doc_id and r.included]
        name = doc_id.split(":", 1)[1]
        return bool(rows) and f"### Table {name}" in json.dumps(self.result.payload)

    def mentions(self, doc_id: str) -> bool:
        name = doc_id.split(":", 1)[1]
        return f"### Table {name}" in json.dumps(self.result.payload) or any(
            r.id == doc_id and r.included for r in self.result.report.items)


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> SalesTools:
    return SalesTools(create_database(tmp_path_factory.mktemp("demo") / "sales.db"))


def play(scenario: Scenario, tools: SalesTools, make_session: Callable[..., Session],
         model: str = "gpt-4o") -> list[Call]:
    dyn = DynamicContextSource(SchemaRetriever())
    task = TaskContextSource(scenario.question, phase="sql_generation",
                             mode="read-only analysis",
                             task_context={"database": "sales", "dialect": "sqlite"})
    session = make_session(tools=TOOL_SCHEMAS, sources=[dyn, task],
                           options=BuildOptions(model=model, volatile_share=SHARE))
    dyn.attach(session.memory.history)
    session.add_message_sync("user", scenario.question)
    calls = []
    for reply in scenario.replies:
        result = session.build_sync(max_tokens=BUDGET)
        assert dyn.last is not None
        call = Call(result, dyn.last)
        calls.append(call)
        session.add_message_sync(**reply)
        for tc in reply.get("tool_calls") or []:
            fn = tc["function"]
            out = tools.call(fn["name"], json.loads(fn["arguments"]))
            call.tool_results.append(out)
            session.add_message_sync("tool", out, tool_call_id=tc["id"])
    return calls


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_each_call_holds_the_schema_it_needs_and_not_before(
        scenario: Scenario, tools: SalesTools, make_session: Callable[..., Session]) -> None:
    calls = play(scenario, tools, make_session)
    assert len(calls) == len(scenario.replies)
    for i, ids in scenario.needs.items():
        missing = [d for d in ids if not calls[i].holds(d)]
        assert not missing, (i, missing, calls[i].assembly)
    for i, ids in scenario.absent.items():
        present = [d for d in ids if calls[i].mentions(d)]
        assert not present, (i, present, calls[i].assembly)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_static_prefix_is_byte_identical_and_the_block_follows_the_history(
        scenario: Scenario, tools: SalesTools, make_session: Callable[..., Session]) -> None:
    calls = play(scenario, tools, make_session)
    first = calls[0].result.messages[0]
    assert first["role"] == "system" and first["content"].startswith("### Requirement")
    assert scenario.question in first["content"] and "sqlite" in first["content"]
    for n, call in enumerate(calls):
        payload = call.result.payload
        assert check_request("openai", payload) == []
        assert payload["tools"] == list(TOOL_SCHEMAS)
        msgs = call.result.messages
        assert msgs[0] == first  # the static part: same bytes on every call
        assert "### Constraints" not in msgs[0]["content"]
        block = [k for k, m in enumerate(msgs) if "### Constraints" in str(m.get("content"))]
        assert len(block) == 1 and msgs[block[0]]["role"] == "system"
        history = [k for k, m in enumerate(msgs) if m["role"] in ("assistant", "tool")]
        assert all(k < block[0] for k in history)  # the volatile tail comes after history
        if n == 0:
            assert [m["role"] for m in msgs] == ["system", "system", "user"]
        else:
            assert block[0] == len(msgs) - 1
            # the previous request's head is reused: at least the whole static system message
            assert call.result.report.reused_prefix_tokens > 0


def test_total_sales_is_answered_in_one_call_with_sql_that_runs(
        tools: SalesTools, make_session: Callable[..., Session]) -> None:
    (call,) = play(TOTAL_SALES, tools, make_session)
    assert call.assembly.tiers["schema:sales"].name == "P1"
    assert "tool_calls" not in TOTAL_SALES.replies[0]
    out = tools.run_sql(WEEK_SQL).splitlines()
    assert out[0] == "total_sales" and float(out[1]) > 0


def test_list_tables_changes_what_the_next_call_retrieves(
        tools: SalesTools, make_session: Callable[..., Session]) -> None:
    calls = play(PURCHASE_BEHAVIOUR, tools, make_session)
    listing = calls[0].tool_results[0]
    assert "products" in listing and "reviews" in listing
    q0, q1 = calls[0].assembly.query, calls[1].assembly.query
    assert q0 == PURCHASE_BEHAVIOUR.question
    assert q1.startswith(PURCHASE_BEHAVIOUR.question) and listing.splitlines()[0] in q1
    new = set(calls[1].assembly.kept) - set(calls[0].assembly.kept)
    assert {"schema:products", "schema:reviews"} <= new
    assert not any(r.startswith("error:") for c in calls for r in c.tool_results)


def test_a_failed_query_brings_the_schema_that_fixes_it(
        tools: SalesTools, make_session: Callable[..., Session]) -> None:
    calls = play(RETURN_RATE, tools, make_session)
    error = calls[0].tool_results[0]
    assert error.startswith("error: no such column: order_id")
    assert error in calls[1].assembly.query  # the error drives the next retrieval
    assert calls[1].assembly.tiers["schema:returns"].name == "P1"
    fixed = calls[1].tool_results[0].splitlines()
    assert fixed[0] == "return_rate_pct" and 0 < float(fixed[1]) < 100


def test_the_scenarios_are_well_formed_scripts() -> None:
    for sc in SCENARIOS:
        assert sc.replies and all(r["role"] == "assistant" for r in sc.replies)
        assert "tool_calls" not in sc.replies[-1] and sc.replies[-1]["content"]
        ids = [tc["id"] for r in sc.replies for tc in r.get("tool_calls") or []]
        assert len(ids) == len(set(ids))
        for r in sc.replies:
            for tc in r.get("tool_calls") or []:
                assert tc["function"]["name"] in {s["function"]["name"] for s in TOOL_SCHEMAS}
                json.loads(tc["function"]["arguments"])
        assert all(0 <= i < len(sc.replies) for i in (*sc.needs, *sc.absent))


def test_anthropic_requests_hold_the_same_schemas_and_pass_their_check(
        tools: SalesTools, make_session: Callable[..., Session]) -> None:
    calls = play(PURCHASE_BEHAVIOUR, tools, make_session, model="claude-sonnet-4-5")
    systems = [json.dumps(c.result.payload["system"]) for c in calls]
    assert len(set(systems)) == 1 and "### Requirement" in systems[0]
    for c in calls:
        assert c.result.rendered.format == "anthropic"
        assert check_request("anthropic", c.result.payload) == []
    assert calls[1].holds("schema:products") and not calls[0].mentions("schema:products")


def test_the_dynamic_share_caps_the_block(tools: SalesTools,
                                          make_session: Callable[..., Session]) -> None:
    calls = play(PURCHASE_BEHAVIOUR, tools, make_session)
    for c in calls:
        assert c.assembly.budget == int(SHARE * BUDGET)
        assert c.assembly.tokens <= c.assembly.budget
        rows = [r for r in c.result.report.items if r.source == "dynamic_context"]
        assert {r.id for r in rows if r.included} == set(c.assembly.kept)
