"""The seed's section style for the text formats (seed 002's DefaultStructurer): labels under
the headers, ``[来源: …]`` tags on evidence, the default ``[Output]`` instruction — counted, so a
build in this style stays within its budget."""

from __future__ import annotations

import pytest

from loomctx.builder import BuildOptions, ContextBuilder
from loomctx.errors import ConfigError
from loomctx.items import ContextItem, Tier
from loomctx.render.protocol import Layout
from loomctx.render.text import SEED_LABELS, SEED_OUTPUT, TextRenderer
from loomctx.sources.static import SystemPromptSource, UserInputSource
from loomctx.tokens.registry import counter_for_model

COUNTER = counter_for_model("gpt-4o").counter


def _layout(output: str = "") -> Layout:
    return Layout(
        system=[ContextItem(id="s", source="s", content="你是助手。", kind="system",
                            tier=Tier.P0)],
        state=[ContextItem(id="st", source="agent_output", content="已查询订单。",
                           kind="state")],
        evidence=[ContextItem(id="m", source="memory", content="用户上周下单。",
                              kind="evidence"),
                  ContextItem(id="r", source="rag", content="退货需七天内。", kind="evidence")],
        input=[ContextItem(id="in", source="user_input", content="能退货吗？", kind="input",
                           tier=Tier.P0)],
        output=output,
    )


def test_the_seed_style_has_labels_source_tags_and_the_default_output() -> None:
    text = TextRenderer(COUNTER, order="gssc", style="seed").render(_layout()).payload["text"]
    assert text == (
        "[Role & Policies]\n你是助手。\n\n"
        "[Task]\n用户问题：\n能退货吗？\n\n"
        "[State]\n关键进展与未决问题：\n已查询订单。\n\n"
        "[Evidence]\n事实与引用：\n[来源: memory] 用户上周下单。\n[来源: rag] 退货需七天内。\n\n"
        f"[Output]\n{SEED_OUTPUT}")
    own = TextRenderer(COUNTER, style="seed").render(_layout("只答是或否。")).payload["text"]
    assert "[Output]\n只答是或否。" in own and SEED_OUTPUT not in own


def test_the_plain_style_is_unchanged() -> None:
    text = TextRenderer(COUNTER).render(_layout()).payload["text"]
    assert "[来源" not in text and "[Output]" not in text
    assert not any(label in text for label in SEED_LABELS.values())


@pytest.mark.parametrize("headers", [True, False])
def test_cost_and_overhead_cover_what_the_seed_style_adds(headers: bool) -> None:
    r = TextRenderer(COUNTER, style="seed", headers=headers)
    lay = _layout()
    items = [*lay.system, *lay.state, *lay.evidence, *lay.input]
    out = r.render(lay)
    assert out.tokens == COUNTER.count(out.payload["text"])
    assert out.tokens <= r.overhead() + sum(r.cost(i) for i in items)
    assert r.cost(lay.evidence[0]) == COUNTER.count("[来源: memory] 用户上周下单。") + 1


@pytest.mark.parametrize("budget", [140, 200, 400])
def test_a_build_in_the_seed_style_stays_within_its_budget(budget: int) -> None:
    builder = ContextBuilder(
        [SystemPromptSource("你是助手。" * 3), UserInputSource()],
        options=BuildOptions(format="text", text_style="seed"))
    result = builder.build_sync("能退货吗？" * 4, max_tokens=budget)
    assert "[Output]\n" + SEED_OUTPUT in result.payload["text"]
    assert "[Task]\n用户问题：\n能退货吗？" in result.payload["text"]
    assert result.tokens == COUNTER.count(result.payload["text"]) <= budget


def test_a_bad_style_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="text_style"):
        BuildOptions(text_style="fancy")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="style"):
        TextRenderer(COUNTER, style="fancy")  # type: ignore[arg-type]
