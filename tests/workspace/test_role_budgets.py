"""Every role context obeys the budget by an independent tokenizer and keeps its P0 parts; under
a tight budget previews shrink and older rounds collapse before anything is dropped, and the
report names what was shortened or left out."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from oracle import PureCounter

from loomctx.builder import BuildResult
from loomctx.errors import BudgetError
from loomctx.tokens.chat import ChatCounter
from loomctx.workspace import (
    ConversationManager,
    WorkSpace,
    build_action_context,
    build_concierge_context,
    build_orchestrator_context,
)

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
ENCODING = {"gpt-4o": "o200k_base", "gpt-4": "cl100k_base"}


def oracle(result: BuildResult, model: str) -> int:
    counter = PureCounter(ENCODING[model])
    if result.rendered.format == "text":
        return counter.count(result.text)
    chat = ChatCounter(counter, "openai")  # type: ignore[arg-type]
    return chat.messages(result.payload["messages"], result.payload.get("tools"))


WORDS = st.sampled_from(["咖啡", "冷萃", "用户", "白领", "coffee", "brew", "hook", "persona",
                         "需要", "写作", "\n", "🔍", "market", "低糖", "price", "!"])
TEXT = st.lists(WORDS, min_size=0, max_size=60).map(" ".join)
TYPES = st.sampled_from(["websearch", "persona", "material", "hitpoint", "xhs", "memo"])
ACTIONS = st.sampled_from(["websearch", "persona", "hitpoint", "xhs_post", "knowledge"])


@st.composite
def worlds(draw: st.DrawFn) -> tuple[WorkSpace, ConversationManager]:
    ws, cm = WorkSpace(), ConversationManager()
    for _ in range(draw(st.integers(1, 3))):
        cm.add_user_message(draw(TEXT) or "hi")
        cm.add_concierge_response(draw(TEXT), original_response=draw(TEXT))
        cm.start_orchestrator_call(draw(TEXT) or "task")
        for _ in range(draw(st.integers(0, 3))):
            cm.add_round(draw(TEXT), draw(TEXT))
            for _ in range(draw(st.integers(0, 2))):
                ids = [ws.add_note(draw(TYPES), draw(TEXT)).id
                       for _ in range(draw(st.integers(0, 2)))]
                refs = " ".join(f"@{i}" for i in draw(st.lists(st.sampled_from(ids or ["x1"]))))
                cm.add_action(draw(ACTIONS), f"{draw(TEXT)} {refs}", tuple(ids))
    return ws, cm


def _check(build: object, p0: list[str], budget: int, model: str) -> None:
    try:
        result = build()  # type: ignore[operator]
    except BudgetError:
        event("refused: the pinned parts exceed the budget")
        return  # refused, never overrun
    event("built" if all(r.included for r in result.report.items) else "built, some left out")
    assert oracle(result, model) <= budget
    assert result.tokens <= budget and result.report.budget <= budget
    for text in p0:
        assert text in (result.text or str(result.messages))
    assert all(r.included for r in result.report.items if r.tier == 0)


@SETTINGS
@given(worlds(), st.integers(60, 1500), st.sampled_from(["gpt-4o", "gpt-4"]),
       st.sampled_from(["text", "openai"]))
def test_concierge_within_budget(world: tuple[WorkSpace, ConversationManager], budget: int,
                                 model: str, fmt: str) -> None:
    ws, cm = world
    _check(lambda: build_concierge_context("新问题 new question", ws, cm, budget=budget,
                                           model=model, format=fmt, instructions="ROLE-C"),
           ["ROLE-C", "新问题 new question"], budget, model)


@SETTINGS
@given(worlds(), st.integers(60, 1500), st.sampled_from(["gpt-4o", "gpt-4"]),
       st.sampled_from(["text", "openai"]))
def test_orchestrator_within_budget(world: tuple[WorkSpace, ConversationManager], budget: int,
                                    model: str, fmt: str) -> None:
    ws, cm = world
    mx = 12 + 3 * (len(cm.calls) - 1)
    _check(lambda: build_orchestrator_context("TASK-O", ws, cm, budget=budget, model=model,
                                              format=fmt, instructions="ROLE-O"),
           ["ROLE-O", "TASK-O", f"/{mx}"], budget, model)


@SETTINGS
@given(worlds(), st.integers(60, 1500), ACTIONS, st.sampled_from(["gpt-4o", "gpt-4"]),
       st.sampled_from(["text", "openai"]))
def test_action_within_budget(world: tuple[WorkSpace, ConversationManager], budget: int,
                              action: str, model: str, fmt: str) -> None:
    ws, cm = world
    refs = " ".join(f"@{n}" for n in list(ws.notes)[:3])
    _check(lambda: build_action_context(action, f"DO-IT {refs}", ws, cm, budget=budget,
                                        model=model, format=fmt, instructions="ROLE-A"),
           ["ROLE-A", f"DO-IT {refs}"], budget, model)


def _long_world() -> tuple[WorkSpace, ConversationManager]:
    ws, cm = WorkSpace(), ConversationManager()
    cm.add_user_message("write")
    for c in range(2):
        cm.start_orchestrator_call(f"task {c}")
        for r in range(4):
            cm.add_round(f"observation {c}.{r} " + "market notes " * 30,
                         f"thought {c}.{r} " + "plan " * 30)
            n = ws.add_note("websearch", f"result {c}.{r} " + "finding " * 60)
            cm.add_action("websearch", f"search {c}.{r}", (n.id,))
    ws.add_note("material", "brand book " * 200)
    return ws, cm


def test_seed_lengths_when_they_fit_and_compact_forms_named_when_not() -> None:
    ws, cm = _long_world()
    roomy = build_orchestrator_context("go", ws, cm, budget=20_000)
    assert not any("~" in r.id for r in roomy.report.items)
    assert all(r.included for r in roomy.report.items)
    tight = build_orchestrator_context("go", ws, cm, budget=900)
    ids = [r.id for r in tight.report.items]
    assert any(i.endswith("~line") for i in ids)  # older rounds collapsed to one line
    assert "round:2.4" in tight.report.included_ids  # the newest round stays in full
    assert tight.tokens <= 900
    c_roomy = build_concierge_context("q", ws, cm, budget=20_000)
    c_tight = build_concierge_context("q", ws, cm, budget=400)
    assert not any("~" in r.id for r in c_roomy.report.items)
    assert any(r.id.startswith("note:websearch1~") for r in c_tight.report.items)
    assert c_tight.tokens <= 400
    dropped = [r for r in c_tight.report.items if not r.included]
    assert all(r.reason in ("budget", "truncated") for r in dropped)


def test_action_materials_become_previews_before_the_named_refs_suffer() -> None:
    ws, cm = _long_world()
    roomy = build_action_context("xhs_post", "use @websearch1", ws, cm, budget=20_000)
    assert "ref:material1" in roomy.report.included_ids
    tight = build_action_context("xhs_post", "use @websearch1", ws, cm, budget=300)
    assert "ref:websearch1" in tight.report.included_ids
    assert any(r.id.startswith("ref:material1~") for r in tight.report.items)
    assert tight.tokens <= 300


@pytest.mark.parametrize("fmt", ["text", "openai"])
def test_stable_parts_lead(fmt: str) -> None:
    ws, cm = _long_world()
    first = build_orchestrator_context("go", ws, cm, budget=20_000, format=fmt,
                                       instructions="You plan.")
    cm.add_round("new round", "more")
    second = build_orchestrator_context("go", ws, cm, budget=20_000, format=fmt,
                                        instructions="You plan.")
    assert first.report.prefix_tokens > 0
    assert first.report.prefix_hash == second.report.prefix_hash  # earlier calls unchanged
