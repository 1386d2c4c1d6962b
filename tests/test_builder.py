"""ContextBuilder: options, async/sync parity, selection reasons, report consistency."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import pytest

from loomctx.budget.manager import AdaptiveBudgetManager
from loomctx.builder import BuildOptions, BuildResult, ContextBuilder
from loomctx.errors import BudgetError, ConfigError
from loomctx.items import RAW_RELEVANCE, ContextItem
from loomctx.report import REASONS, BuildReport, ItemReport
from loomctx.select.scoring import SelectOptions
from loomctx.sources.agent_output import AgentOutput, AgentOutputSource
from loomctx.sources.history import HistorySource
from loomctx.sources.knowledge import Document, KnowledgeSource
from loomctx.sources.skills import Skill, SkillSource
from loomctx.sources.static import SystemPromptSource, UserInputSource
from loomctx.sources.tools import ToolSource
from loomctx.tokens.registry import counter_for_model

NOW = 1_714_560_000.0
SYSTEM = "You are Atlas, the operations assistant. Never invent tracking numbers."
HISTORY = [
    {"id": f"m{i}", "role": "user" if i % 2 == 0 else "assistant",
     "content": f"Turn {i}: the Hamburg pickup for order {1000 + i} is confirmed.",
     "timestamp": NOW - 600 + i}
    for i in range(30)
]
TOOLS = [{"name": n, "description": d} for n, d in [
    ("track_shipment", "Current status and location of one shipment."),
    ("issue_refund", "Issue a refund or credit note for a shipment."),
    ("send_email", "Send an email to a customer."),
]]
DOCS = [
    Document(id="refunds.md", text="Customs holds are not refunded; a goodwill credit of 5% "
                                   "may be offered after five working days."),
    Document(id="copy.md", text="Customs holds are not refunded; a goodwill credit of 5% "
                                "may be offered after five working days."),
    Document(id="hubs.md", text="The Milano gateway opens at nine. Lyon handles customs."),
    Document(id="weather.md", text="Sunny weather expected over the Alps this weekend."),
]
QUERY = "What is the refund policy for a customs hold?"


def sources(**kw: Any) -> list[Any]:
    return [SystemPromptSource(SYSTEM), UserInputSource(), HistorySource(HISTORY),
            ToolSource(TOOLS), KnowledgeSource(DOCS, chunk_tokens=40),
            SkillSource([Skill(name="refunds", description="refund rules",
                               instructions="Quote the policy section.")]),
            AgentOutputSource([AgentOutput(id="plan", content="Plan: check policy, then reply.",
                                           timestamp=NOW - 60)]), *kw.get("extra", ())]


def build(fmt: str = "openai", budget: int | None = 3000, query: str = QUERY,
          **opts: Any) -> BuildResult:
    b = ContextBuilder(sources(), options=BuildOptions(format=fmt, **opts))  # type: ignore
    return b.build_sync(query, max_tokens=budget, now=NOW)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [({"format": "yaml"}, "'yaml'"), ({"format": "template"}, "template"),
     ({"source_timeout": 0}, "0"), ({"min_fragment": 0}, "min_fragment")],
)
def test_build_options_are_validated(kwargs: dict, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        BuildOptions(**kwargs)


def test_builder_configuration_errors() -> None:
    with pytest.raises(ConfigError, match="duplicates"):
        ContextBuilder([UserInputSource(), UserInputSource()])
    with pytest.raises(ConfigError, match="unknown model"):
        ContextBuilder([UserInputSource()], options=BuildOptions(model="my-private-llm"))
    b = ContextBuilder([UserInputSource()], options=BuildOptions(
        model="my-private-llm", fallback_encoding="cl100k_base"))
    assert b.tokenizer.fallback == "cl100k_base"
    with pytest.raises(ConfigError, match=">= 16"):
        b.build_sync("q", max_tokens=5)
    with pytest.raises(ConfigError, match="no budget"):  # unknown model: no window
        b.build_sync("q")


def test_default_budget_is_the_model_window_less_the_reserve() -> None:
    b = ContextBuilder([UserInputSource()], options=BuildOptions(model="gpt-4"))
    r = b.build_sync("hello", now=NOW)
    assert r.report.budget == int(8192 * 0.9)
    assert r.report.model == "gpt-4" and r.report.counter == "cl100k_base" and r.report.exact


def test_sync_and_async_give_the_same_result() -> None:
    b = ContextBuilder(sources(), options=BuildOptions(format="openai"))
    sync = b.build_sync(QUERY, max_tokens=1200, now=NOW)
    asyn = asyncio.run(b.build(QUERY, max_tokens=1200, now=NOW))
    assert json.dumps(sync.payload) == json.dumps(asyn.payload)
    assert sync.report.included_ids == asyn.report.included_ids


def test_build_sync_works_inside_a_running_loop_and_matches_build() -> None:
    b = ContextBuilder([UserInputSource()], options=BuildOptions(format="text"))

    async def inner() -> tuple[str, str]:
        inside = b.build_sync("q", max_tokens=100)  # runs on a worker thread's loop
        awaited = await b.build("q", max_tokens=100)
        return inside.text, awaited.text

    inside, awaited = asyncio.run(inner())
    assert inside == awaited == b.build_sync("q", max_tokens=100).text
    assert "q" in inside


def test_framing_larger_than_the_budget_is_a_budget_error() -> None:
    with pytest.raises(BudgetError) as info:
        build("anthropic", budget=100, query="hi")
    assert info.value.available == 100 and info.value.required > 100


def test_selection_reasons_dedup_relevance_and_required_skill() -> None:
    r = build(budget=6000, query=QUERY + " Use /refunds.")
    rep = r.report
    assert rep.item("skill:refunds").reason == "required"
    assert rep.item("skill:refunds").included
    assert "Quote the policy section." in r.messages[0]["content"]  # skills join the system
    assert rep.item("copy.md#0").reason == "duplicate"
    assert not rep.item("copy.md#0").included
    weather = [row for row in rep.items if row.id.startswith("weather.md")]
    assert all(row.reason == "low_relevance" and not row.included for row in weather)
    assert rep.item("refunds.md#0").included
    evidence = r.messages[-2]["content"]
    assert "goodwill credit" in evidence and "Sunny weather" not in evidence
    assert "Plan: check policy" in evidence


def report_matches_payload(r: BuildResult) -> None:
    rep = r.report
    ids = [row.id for row in rep.items]
    assert len(ids) == len(set(ids)), "a candidate reported twice"
    assert all(row.reason in REASONS for row in rep.items)
    incl = [row for row in rep.items if row.included]
    assert sorted(row.position for row in incl) == list(range(len(incl)))  # type: ignore
    blob = json.dumps(r.payload, ensure_ascii=False)
    for row in rep.items:
        if row.source == "L1_recent":
            marker = f"Turn {row.id[1:]}:"
            assert (marker in blob) == row.included, row
        if row.source == "tools":
            name = row.id[5:]
            shown = f'"{name}"' in blob if r.rendered.format in ("openai", "anthropic") else \
                f"{name}: " in r.text
            assert shown == row.included, row
    by_source = {s.name: s for s in rep.sources}
    for name, s in by_source.items():
        rows = [row for row in rep.items if row.source == name]
        assert s.candidates == len(rows)
        assert s.included == sum(row.included for row in rows)
        assert s.used == sum(row.tokens or 0 for row in rows if row.included)
    assert sum(s.used for s in rep.sources) + sum(
        row.tokens or 0 for row in incl if row.source not in by_source) <= rep.budget


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "text", "minimal"])
@pytest.mark.parametrize("budget", [700, 1500, 6000])
def test_report_lists_every_candidate_once_and_matches_the_payload(fmt: str,
                                                                   budget: int) -> None:
    r = build(fmt, budget=budget)
    report_matches_payload(r)
    assert r.tokens <= budget
    n_candidates = len(HISTORY) + len(TOOLS) + 1 + 1 + 1 + 1  # + system, input, skill, plan
    n_rows = len(r.report.items) - ("summary:history" in {x.id for x in r.report.items})
    knowledge = next(s for s in r.report.sources if s.name == "RAG_knowledge")
    assert n_rows == n_candidates + knowledge.candidates


def test_report_to_dict_is_what_asdict_gives_from_rows_and_from_items() -> None:
    """``to_dict`` writes the fields itself (``asdict`` was slow); the same values either way,
    before the items were made (from the rows) and after, and the rows are made once."""
    from dataclasses import asdict

    r = build(budget=600)
    calls: list[int] = []
    rows = list(r.report._rows) if not callable(r.report._rows) else r.report._rows()
    short = [row[:9] if row[9] is None else row for row in rows]  # a default left out

    def made() -> list[tuple[Any, ...]]:
        calls.append(1)
        return short

    fresh = BuildReport(**{f: getattr(r.report, f) for f in (
        "format", "model", "counter", "exact", "budget", "tokens", "prefix_tokens",
        "prefix_hash", "sources", "timings_ms", "reused_prefix_tokens", "reused_prefix_parts")},
        _rows=made)
    expected = {**{k: v for k, v in r.report.to_dict().items() if k not in ("sources", "items")},
                "sources": [asdict(s) for s in r.report.sources],
                "items": [asdict(i) for i in r.report.items]}
    assert fresh.to_dict() == expected  # from the rows
    assert fresh.items == r.report.items and calls == [1]
    assert fresh.to_dict() == expected  # from the items


def test_report_json_round_trip_and_table() -> None:
    r = build(budget=600)
    data = json.loads(r.report.to_json())
    assert data == r.report.to_dict()
    assert data["tokens"] == r.tokens and data["budget"] == 600
    assert {s["name"] for s in data["sources"]} == {
        "system_prompt", "user_input", "L1_recent", "tools", "RAG_knowledge", "skills",
        "agent_output"}
    rebuilt = BuildReport(**{k: v for k, v in data.items() if k not in ("sources", "items")},
                          sources=r.report.sources,
                          _rows=[tuple(row.values()) for row in data["items"]])
    assert rebuilt.items == r.report.items
    assert all(isinstance(row, ItemReport) for row in rebuilt.items)
    whole = r.to_dict()
    assert whole["messages"] == r.messages and whole["tokens"] == r.tokens
    assert json.loads(json.dumps(whole, ensure_ascii=False)) == whole
    table = r.report.table()
    for name in data["sources"]:
        assert name["name"] in table
    assert "budget 600" in table and "dropped: budget=" in table
    assert "… " in r.report.table(max_rows=3)


class _Boom:
    async def summarize(self, items: Sequence[ContextItem], max_tokens: int,
                        counter: Any) -> str:
        raise RuntimeError("llm down")


def test_a_failing_summarizer_is_reported_and_the_build_goes_on() -> None:
    results = [{"id": f"r{k}", "role": "tool", "tool_call_id": f"c{k}",
                "content": "scan line SHP-4 customs\n" * 120} for k in range(3)]
    history = [*HISTORY[:10],
               {"id": "calls", "role": "assistant", "content": None, "tool_calls": [
                   {"id": f"c{k}", "type": "function",
                    "function": {"name": "scan_log", "arguments": "{}"}} for k in range(3)]},
               *results, {"id": "last", "role": "user", "content": "thanks"}]
    b = ContextBuilder([SystemPromptSource(SYSTEM), UserInputSource(), HistorySource(history)],
                       options=BuildOptions(format="openai"), summarizer=_Boom())
    r = b.build_sync("q", max_tokens=800, now=NOW)
    row = r.report.item("summary:history")
    assert not row.included and "RuntimeError: llm down" in row.reason
    assert r.report.item("last").included
    assert r.tokens <= 800


def test_phase_moves_budget_with_an_adaptive_manager() -> None:
    b = ContextBuilder(sources(), options=BuildOptions(format="openai"),
                       budget=AdaptiveBudgetManager())
    early = b.build_sync(QUERY, max_tokens=4000, now=NOW, phase="early").report
    late = b.build_sync(QUERY, max_tokens=4000, now=NOW, phase="late").report

    def share(rep: BuildReport, name: str) -> int:
        return next(s.allocated for s in rep.sources if s.name == name)

    assert share(early, "RAG_knowledge") > share(late, "RAG_knowledge")
    with pytest.raises(ConfigError, match="unknown phase"):
        b.build_sync(QUERY, max_tokens=4000, now=NOW, phase="dusk")


def test_counts_come_from_the_target_tokenizer() -> None:
    r = build("text", budget=2000)
    assert r.tokens == counter_for_model("gpt-4o").counter.count(r.text)
    r4 = build("text", budget=2000, model="gpt-4")
    assert r4.tokens == counter_for_model("gpt-4").counter.count(r4.text)
    assert r4.report.counter == "cl100k_base"


class Passages:
    """Evidence of set sizes, best first (a retrieval source's shape)."""

    name = "passages"

    def __init__(self, words: Sequence[int]) -> None:
        self.items = [ContextItem(id=f"p{i}", source=self.name, kind="evidence",
                                  content=" ".join(["customs"] * n),
                                  scores={RAW_RELEVANCE: 10.0 - i})
                      for i, n in enumerate(words)]

    async def collect(self, request: Any) -> Sequence[ContextItem]:
        return [ContextItem(id=it.id, source=it.source, kind=it.kind, content=it.content,
                            scores=dict(it.scores)) for it in self.items]


def _framing_build(budget: int, *, top_up: bool, monkeypatch: pytest.MonkeyPatch) -> BuildResult:
    # The history has candidates (its framing is reserved) but its one message never fits.
    history = HistorySource([{"id": "h0", "role": "user", "content": "Hamburg " * 3000,
                              "timestamp": NOW - 60}])
    b = ContextBuilder([UserInputSource(), history, Passages([40, 40, 40, 22, 9])],
                       options=BuildOptions(format="text", min_fragment=10**6,
                                            select=SelectOptions(mmr_lambda=1.0)))
    with monkeypatch.context() as m:
        if not top_up:
            m.setattr(ContextBuilder, "_top_up", lambda self, st, ordered: None)
        return b.build_sync("Which customs passage?", max_tokens=budget, now=NOW)


def test_framing_of_sections_left_empty_goes_to_the_next_best_units(
        monkeypatch: pytest.MonkeyPatch) -> None:
    gained = []
    for budget in range(100, 200):
        with_top_up = _framing_build(budget, top_up=True, monkeypatch=monkeypatch)
        without = _framing_build(budget, top_up=False, monkeypatch=monkeypatch)
        assert with_top_up.tokens <= budget
        before = {r.id for r in without.report.items if r.included}
        after = {r.id: r for r in with_top_up.report.items if r.included}
        assert before <= set(after)
        assert "h0" not in after  # never the history: its tail stays contiguous
        extra = set(after) - before
        for item_id in extra:
            assert after[item_id].reason == "selected"
            assert next(r for r in without.report.items if r.id == item_id).reason == "budget"
        if extra:
            gained.append(budget)
    # The empty history and summary sections free a few tokens: some budgets gain a passage.
    assert gained


class _Returned(Passages):
    """Passages that keep what each collect returned, to look at it after the build."""

    def __init__(self, words: Sequence[int], *, fresh: bool) -> None:
        super().__init__(words)
        self.fresh = fresh
        self.returned: list[ContextItem] = []

    async def collect(self, request: Any) -> Sequence[ContextItem]:
        self.returned = list(await super().collect(request))
        return self.returned


def test_a_fresh_source_is_scored_in_place_and_any_other_through_copies() -> None:
    results = {}
    for fresh in (False, True):
        src = _Returned([40, 30, 22, 9], fresh=fresh)  # no duplicates: each one is scored
        b = ContextBuilder([UserInputSource(), src], options=BuildOptions(format="text"))
        r = b.build_sync("Which customs passage?", max_tokens=200, now=NOW)
        scored = [("composite" in it.scores, it.tokens is not None) for it in src.returned]
        assert scored == [(fresh, fresh)] * 4  # copies leave the source's items as they were
        results[fresh] = [(i.id, i.included, i.reason, i.tokens, i.score)
                          for i in r.report.items]
    assert results[True] == results[False]  # the same build either way


def test_sources_are_not_fresh_unless_they_say_so() -> None:
    from loomctx.retrieval.source import UnifiedRetrievalSource
    from loomctx.sources.protocol import BaseSource, makes_fresh

    assert not makes_fresh(Passages([1])) and not makes_fresh(BaseSource())
    assert makes_fresh(UnifiedRetrievalSource)  # type: ignore[arg-type]
