"""The seed's section structure (labels, source tags, default [Output]) and its section
truncation order, as options of the text format."""

from __future__ import annotations

import pytest

from loomctx.builder import BuildOptions, ContextBuilder
from loomctx.compress.truncate import SECTION_MARKER
from loomctx.errors import BudgetError, ConfigError
from loomctx.items import ContextItem, Tier
from loomctx.render.layout import layout as place
from loomctx.render.protocol import Layout
from loomctx.render.text import SEED_LABELS, SEED_OUTPUT, TextRenderer
from loomctx.render.verify import render_within
from loomctx.sources.static import SystemPromptSource, UserInputSource
from loomctx.tokens.registry import counter_for_model

COUNTER = counter_for_model("gpt-4o").counter


def lay(output: str = "") -> Layout:
    return Layout(
        system=[ContextItem(id="sys", source="s", content="You are Atlas.", kind="system",
                            tier=Tier.P0)],
        history=[ContextItem(id="m1", source="history", content="Where is SHP-1?",
                             kind="message", role="user", seq=1)],
        state=[ContextItem(id="st", source="agent_output", content="Plan: answer.",
                           kind="state")],
        evidence=[ContextItem(id="ev1", source="memory", content="SHP-1 is held in Lyon.",
                              kind="evidence"),
                  ContextItem(id="ev2", source="rag", content="Holds get no refund.",
                              kind="evidence")],
        input=[ContextItem(id="in", source="user_input", content="And the refund?",
                           kind="input", tier=Tier.P0)],
        output=output)


def items(lay_: Layout) -> list[ContextItem]:
    return [*lay_.system, *lay_.history, *lay_.state, *lay_.evidence, *lay_.input]


def test_seed_style_gives_labels_source_tags_and_the_default_output() -> None:
    text = TextRenderer(COUNTER, order="gssc", style="seed").render(lay()).payload["text"]
    labels = SEED_LABELS["zh"]
    assert f"[Task]\n{labels['task']}\nAnd the refund?" in text
    assert f"[State]\n{labels['state']}\nPlan: answer." in text
    assert (f"[Evidence]\n{labels['evidence']}\n[来源: memory] SHP-1 is held in Lyon.\n"
            "[来源: rag] Holds get no refund.") in text
    assert f"[Context]\n{labels['context']}\nuser: Where is SHP-1?" in text
    assert text.endswith(f"[Output]\n{SEED_OUTPUT['zh']}")
    plain = TextRenderer(COUNTER, order="gssc").render(lay()).payload["text"]
    assert "来源" not in plain and "[Output]" not in plain


def test_seed_style_keeps_given_output_and_speaks_english() -> None:
    r = TextRenderer(COUNTER, style="seed", language="en")
    text = r.render(lay("Answer briefly.")).payload["text"]
    assert "[Output]\nAnswer briefly." in text and SEED_OUTPUT["en"] not in text
    assert "[Source: rag] Holds get no refund." in text
    assert SEED_LABELS["en"]["evidence"] in text


@pytest.mark.parametrize("output", ["", "Answer briefly."])
def test_seed_style_cost_contract(output: str) -> None:
    r = TextRenderer(COUNTER, style="seed")
    out = r.render(lay(output))
    sections = frozenset({"role", "context", "state", "evidence", "task"} |
                         ({"output"} if output else set()))
    assert out.tokens == COUNTER.count(out.payload["text"])
    assert out.tokens <= r.overhead(sections) + sum(r.cost(i) for i in items(lay(output)))


def test_bad_style_options_are_config_errors() -> None:
    for kwargs in ({"style": "go"}, {"language": "fr"}, {"overflow": "cut"}):
        with pytest.raises(ConfigError):
            TextRenderer(COUNTER, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="text_style"):
        BuildOptions(format="text", text_style="go")  # type: ignore[arg-type]


def test_seed_style_through_the_builder() -> None:
    b = ContextBuilder([SystemPromptSource("You are Atlas."), UserInputSource()],
                       options=BuildOptions(format="text", text_style="seed",
                                            text_language="en"))
    r = b.build_sync("And the refund?", max_tokens=300, now=0.0)
    assert f"[Task]\n{SEED_LABELS['en']['task']}\nAnd the refund?" in r.text
    assert f"[Output]\n{SEED_OUTPUT['en']}" in r.text
    assert r.tokens == COUNTER.count(r.text) <= 300
    cutting = ContextBuilder([UserInputSource()], options=BuildOptions(
        format="text", text_overflow="sections"))
    assert isinstance(cutting.renderer, TextRenderer)
    assert cutting.renderer.overflow == "sections" and not cutting.renderer.seed


def long_layout() -> list[ContextItem]:
    hist = [ContextItem(id=f"m{i}", source="history", content=f"turn {i} " + "word " * 40,
                        kind="message", role="user", seq=i, tier=Tier.P0) for i in range(6)]
    ev = [ContextItem(id="ev", source="rag", content="fact " * 60, kind="evidence",
                      tier=Tier.P0)]
    return [*items(lay())[:1], *hist, *ev, *items(lay())[-1:]]


def test_sections_overflow_cuts_context_first_where_drop_fails() -> None:
    """Everything pinned and over budget: dropping cannot help, the seed's order can."""
    included = long_layout()
    total = TextRenderer(COUNTER, order="gssc").render(place(included)).tokens - 100
    cutter = TextRenderer(COUNTER, order="gssc", overflow="sections")
    reasons: dict[str, str] = {}
    rendered, kept = render_within(cutter, place, included, total, reasons)
    text = rendered.payload["text"]
    assert rendered.tokens == COUNTER.count(text) <= total
    assert "[Context]\n" + SECTION_MARKER["zh"] in text
    assert "[Task]\nAnd the refund?" in text and "[Role & Policies]\nYou are Atlas." in text
    assert "turn 5" in text and "turn 0" not in text  # [Context], cut first, kept its newest
    assert "m0" in reasons and reasons["m0"] == "section_cut"
    ids = {it.id for it in kept}
    assert "m5" in ids and "m0" not in ids and {"sys", "in", "ev"} <= ids
    assert rendered.prefix_tokens > 0
    with pytest.raises(BudgetError):
        render_within(TextRenderer(COUNTER, order="gssc"), place, included, total, {})


def test_sections_overflow_leaves_a_fitting_text_alone() -> None:
    included = long_layout()
    r = TextRenderer(COUNTER, overflow="sections")
    total = r.render(place(included)).tokens
    rendered, _ = render_within(r, place, included, total, {})
    assert rendered == r.render(place(included))
    assert "truncated" not in rendered.payload["text"]
    assert r.cut(rendered, total - 10) is not None
    assert TextRenderer(COUNTER).cut(rendered, total - 10) is None
