"""The seed's three SQL scenarios, played turn by turn through a Session as an agent loop would.

Each model call is simulated (:func:`loomctx.demo.replay`): build, take the scripted reply, run
its tool calls with the real tools over the generated database, add the results, build again.
The assertions are on what each built request holds: the schema a call needs is in that call's
context (and not before, where the scenario says so), the static part is byte-identical on every
call, the retrieved block sits after the history, and every request passes the provider's
structural check.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from loomctx import check_request
from loomctx.demo import (
    SCENARIOS,
    SYSTEM_PROMPT,
    TOOL_SCHEMAS,
    SalesTools,
    Scenario,
    SqlDemo,
    Step,
    create_database,
    replay,
    scenario_for,
    sql_demo,
)
from loomctx.demo.scenarios import PURCHASE_BEHAVIOUR, RETURN_RATE, TOTAL_SALES, WEEK_SQL
from loomctx.retrieval.dynamic import Assembly, DynamicOptions
from loomctx.testing import HashingEmbedder

FIXED_NOW = 1_714_560_000.0
BUDGET = 16_000
SHARE = 0.25  # the seed's 4,000 of 16,000


def holds(step: Step, doc_id: str) -> bool:
    """Included by the build report and present in the request's text."""
    rows = [r for r in step.result.report.items if r.id == doc_id and r.included]
    return bool(rows) and f"### Table {doc_id.split(':', 1)[1]}" in json.dumps(
        step.result.payload)


def mentions(step: Step, doc_id: str) -> bool:
    """Included by the report or its table's block anywhere in the request."""
    return f"### Table {doc_id.split(':', 1)[1]}" in json.dumps(step.result.payload) or any(
        r.id == doc_id and r.included for r in step.result.report.items)


def asm(step: Step) -> Assembly:
    """The step's assembly (the source never failed in these runs)."""
    assert step.assembly is not None
    return step.assembly


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return create_database(tmp_path_factory.mktemp("demo") / "sales.db")


@pytest.fixture
def tools(db: Path) -> SalesTools:
    return SalesTools(db)


@pytest.fixture
def play(db: Path, embedder: HashingEmbedder) -> Iterator[Callable[..., list[Step]]]:
    """``play(scenario, model="gpt-4o")``: the scenario replayed through :func:`sql_demo`."""
    made: list[SqlDemo] = []

    def run(scenario: Scenario, model: str = "gpt-4o") -> list[Step]:
        demo = sql_demo(scenario.question, db=db, model=model,
                        dynamic=DynamicOptions(share=SHARE), embedder=embedder,
                        clock=lambda: FIXED_NOW)
        made.append(demo)
        return replay(scenario, demo, max_tokens=BUDGET)

    yield run
    for demo in made:
        demo.session.store.close()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_each_call_holds_the_schema_it_needs_and_not_before(
        scenario: Scenario, play: Callable[..., list[Step]]) -> None:
    calls = play(scenario)
    assert len(calls) == len(scenario.replies)
    for i, ids in scenario.needs.items():
        missing = [d for d in ids if not holds(calls[i], d)]
        assert not missing, (i, missing, calls[i].assembly)
    for i, ids in scenario.absent.items():
        present = [d for d in ids if mentions(calls[i], d)]
        assert not present, (i, present, calls[i].assembly)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_static_prefix_is_byte_identical_and_the_block_follows_the_history(
        scenario: Scenario, play: Callable[..., list[Step]]) -> None:
    calls = play(scenario)
    first = calls[0].result.messages[0]
    assert first["role"] == "system" and first["content"].startswith(SYSTEM_PROMPT)
    assert "### Requirement" in first["content"] and "### Phase" in first["content"]
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
            # the previous request's head is reused: the tools and the static system message,
            # and from the third call on the history before the block as well
            report = call.result.report
            assert report.reused_prefix_tokens >= report.prefix_tokens > 0
            if n >= 2:
                assert report.reused_prefix_tokens > report.prefix_tokens


def test_total_sales_runs_its_sql_from_the_first_context_and_answers_the_number(
        tools: SalesTools, play: Callable[..., list[Step]]) -> None:
    first, last = play(TOTAL_SALES)
    assert asm(first).tiers["schema:sales"].name == "P1"
    (call,) = first.reply["tool_calls"]
    assert json.loads(call["function"]["arguments"]) == {"query": WEEK_SQL}
    out = tools.run_sql(WEEK_SQL).splitlines()
    assert out[0] == "total_sales" and float(out[1]) > 0
    assert first.tool_results == [tools.run_sql(WEEK_SQL)]
    assert out[1] in last.reply["content"] and "{result}" not in last.reply["content"]


def test_list_tables_changes_what_the_next_call_retrieves(
        play: Callable[..., list[Step]]) -> None:
    calls = play(PURCHASE_BEHAVIOUR)
    listing = calls[0].tool_results[0]
    assert "products" in listing and "reviews" in listing
    q0, q1 = asm(calls[0]).query, asm(calls[1]).query
    assert q0 == PURCHASE_BEHAVIOUR.question
    assert q1.startswith(PURCHASE_BEHAVIOUR.question) and listing.splitlines()[0] in q1
    new = set(asm(calls[1]).kept) - set(asm(calls[0]).kept)
    assert {"schema:products", "schema:reviews"} <= new
    assert not any(r.startswith("error:") for c in calls for r in c.tool_results)


def test_a_failed_query_brings_the_schema_that_fixes_it(
        play: Callable[..., list[Step]]) -> None:
    calls = play(RETURN_RATE)
    error = calls[0].tool_results[0]
    assert error.startswith("error: no such column: order_id")
    assert error in asm(calls[1]).query  # the error drives the next retrieval
    assert asm(calls[1]).tiers["schema:returns"].name == "P1"
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
        play: Callable[..., list[Step]]) -> None:
    calls = play(PURCHASE_BEHAVIOUR, model="claude-sonnet-4-5")
    systems = [json.dumps(c.result.payload["system"]) for c in calls]
    assert len(set(systems)) == 1 and "### Requirement" in systems[0]
    for c in calls:
        assert c.result.rendered.format == "anthropic"
        assert check_request("anthropic", c.result.payload) == []
    assert holds(calls[1], "schema:products") and not mentions(calls[0], "schema:products")


def test_the_dynamic_share_caps_the_block(play: Callable[..., list[Step]]) -> None:
    calls = play(PURCHASE_BEHAVIOUR)
    for c in calls:
        assert asm(c).budget == int(SHARE * BUDGET)
        assert asm(c).tokens <= asm(c).budget
        rows = [r for r in c.result.report.items if r.source == "dynamic_context"]
        assert {r.id for r in rows if r.included} == set(asm(c).kept)


def test_scenario_for_finds_a_script_by_name_or_question() -> None:
    assert scenario_for("return_rate") is RETURN_RATE
    assert scenario_for("  total SALES of the last 7 days ") is TOTAL_SALES
    assert scenario_for("Analyse customer purchase behaviour?") is PURCHASE_BEHAVIOUR
    assert scenario_for("what is the weather") is None


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_the_chinese_question_gets_each_schema_at_the_same_call_as_the_english_one(
        scenario: Scenario, play: Callable[..., list[Step]]) -> None:
    """The seed's questions are Chinese: "查询退货率" must bring ``order_items`` and ``orders``
    right after the failed query, as "What is our return rate?" does, not one call later."""
    needed = sorted({d for ids in scenario.needs.values() for d in ids} | {"schema:orders"})

    def first(calls: list[Step]) -> dict[str, int | None]:
        return {d: next((i for i, c in enumerate(calls) if holds(c, d)), None) for d in needed}

    english = first(play(scenario))
    for alias in scenario.aliases:
        calls = play(dataclasses.replace(scenario, question=alias))
        assert first(calls) == english, alias
        for i, ids in scenario.needs.items():
            assert all(holds(calls[i], d) for d in ids), (alias, i)
        for i, ids in scenario.absent.items():
            assert not any(mentions(calls[i], d) for d in ids), (alias, i)
