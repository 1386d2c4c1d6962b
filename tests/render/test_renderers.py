"""Renderers: OpenAI layout, Anthropic alternation and cache breakpoints, text, template."""

from __future__ import annotations

import json

import pytest

from loomctx.builder import BuildOptions, ContextBuilder
from loomctx.errors import BudgetError, ConfigError
from loomctx.items import ContextItem, Tier
from loomctx.render.chat import EVIDENCE_HEADER, AnthropicRenderer, OpenAIRenderer
from loomctx.render.protocol import Layout, Renderer
from loomctx.render.text import TemplateRenderer, TextRenderer
from loomctx.sources.history import HistorySource
from loomctx.sources.static import SystemPromptSource, UserInputSource
from loomctx.sources.tools import ToolSource
from loomctx.tokens.chat import ChatCounter
from loomctx.tokens.registry import counter_for_model

COUNTER = counter_for_model("gpt-4o").counter
SCHEMA = {"type": "function", "function": {
    "name": "track_shipment", "description": "Where a shipment is.",
    "parameters": {"type": "object", "properties": {"id": {"type": "string"}},
                   "required": ["id"]}}}
HISTORY = [
    {"id": "m1", "role": "user", "content": "Where is SHP-1?"},
    {"id": "m2", "role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "track_shipment", "arguments": "{\"id\": \"SHP-1\"}"}}]},
    {"id": "m3", "role": "tool", "tool_call_id": "c1", "content": "customs hold in Lyon"},
    {"id": "m4", "role": "assistant", "content": "SHP-1 is on customs hold in Lyon."},
]


def layout() -> Layout:
    hist = HistorySource(HISTORY).items
    return Layout(
        system=[ContextItem(id="system", source="s", content="You are Atlas.", kind="system",
                            tier=Tier.P0)],
        tools=[ContextItem(id="tool:track_shipment", source="tools", content="track",
                           kind="tool", metadata={"schema": SCHEMA})],
        history=list(hist),
        state=[ContextItem(id="st", source="agent_output", content="Plan: answer.",
                           kind="state")],
        evidence=[ContextItem(id="ev", source="RAG", content="Customs holds get no refund.",
                              kind="evidence")],
        input=[ContextItem(id="input", source="user_input", content="And the refund?",
                           kind="input", tier=Tier.P0)],
        output="Answer briefly.",
    )


def all_items(lay: Layout) -> list[ContextItem]:
    return [*lay.system, *lay.tools, *lay.history, *lay.state, *lay.evidence, *lay.input]


def test_openai_layout_order() -> None:
    r = OpenAIRenderer(ChatCounter(COUNTER, "openai"))
    assert isinstance(r, Renderer)
    out = r.render(layout())
    msgs = out.payload["messages"]
    assert msgs[0] == {"role": "system", "content": "You are Atlas.\n\nAnswer briefly."}
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "tool", "assistant",
                                         "system", "user"]
    assert msgs[2]["tool_calls"][0]["id"] == "c1" and msgs[3]["tool_call_id"] == "c1"
    assert msgs[5]["content"] == (f"{EVIDENCE_HEADER}\n\nPlan: answer.\n\n"
                                  "Customs holds get no refund.")
    assert msgs[-1] == {"role": "user", "content": "And the refund?"}
    assert out.payload["tools"] == [SCHEMA]
    assert out.tokens == ChatCounter(COUNTER, "openai").messages(msgs, [SCHEMA])
    assert out.tokens <= r.overhead() + sum(r.cost(i) for i in all_items(layout()))


def test_openai_prefix_ignores_volatile_parts() -> None:
    r = OpenAIRenderer(ChatCounter(COUNTER, "openai"))
    a = r.render(layout())
    lay = layout()
    lay.evidence[0].content = "Something else entirely."
    lay.input[0].content = "A new question"
    lay.history = lay.history[:1]
    b = r.render(lay)
    assert a.prefix_hash == b.prefix_hash and a.prefix_tokens == b.prefix_tokens
    lay.output = "Answer at length."
    assert r.render(lay).prefix_hash != a.prefix_hash


def test_openai_without_system_or_volatile_parts() -> None:
    r = OpenAIRenderer(ChatCounter(COUNTER, "openai"))
    out = r.render(Layout(input=layout().input))
    assert out.payload == {"messages": [{"role": "user", "content": "And the refund?"}]}
    assert out.prefix_tokens == 0


def test_anthropic_alternation_cache_control_and_tool_blocks() -> None:
    r = AnthropicRenderer(ChatCounter(COUNTER, "anthropic"))
    out = r.render(layout())
    p = out.payload
    assert p["system"] == [{"type": "text", "text": "You are Atlas.\n\nAnswer briefly.",
                            "cache_control": {"type": "ephemeral"}}]
    assert p["tools"] == [{"name": "track_shipment", "description": "Where a shipment is.",
                           "input_schema": SCHEMA["function"]["parameters"],
                           "cache_control": {"type": "ephemeral"}}]
    turns = p["messages"]
    roles = [t["role"] for t in turns]
    assert roles == ["user", "assistant", "user", "assistant", "user"]
    assert turns[1]["content"] == [{"type": "tool_use", "id": "c1", "name": "track_shipment",
                                    "input": {"id": "SHP-1"}}]
    assert turns[2]["content"] == [{"type": "tool_result", "tool_use_id": "c1",
                                    "content": "customs hold in Lyon"}]
    # the end of the history is a cache breakpoint; volatile parts come after it
    assert turns[3]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert turns[4]["content"][0]["text"].startswith(EVIDENCE_HEADER)
    assert turns[4]["content"][-1] == {"type": "text", "text": "And the refund?"}
    assert sum("cache_control" in json.dumps(t) for t in turns) == 1
    assert out.tokens == ChatCounter(COUNTER, "anthropic").messages(
        turns, p["tools"], system=p["system"])


def test_anthropic_history_starting_with_assistant_gets_a_user_turn_first() -> None:
    r = AnthropicRenderer(ChatCounter(COUNTER, "anthropic"))
    lay = layout()
    lay.history = lay.history[3:]  # starts with the assistant's answer
    turns = r.render(lay).payload["messages"]
    assert turns[0]["role"] == "user"
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]


def test_text_sections_in_cache_order_and_gssc_order() -> None:
    cache = TextRenderer(COUNTER).render(layout()).payload["text"]
    headers = [line for line in cache.splitlines() if line.startswith("[")]
    assert headers == ["[Role & Policies]", "[Tools]", "[Output]", "[Context]", "[State]",
                       "[Evidence]", "[Task]"]
    assert "user: Where is SHP-1?" in cache
    assert "assistant: track_shipment({\"id\": \"SHP-1\"})" in cache
    assert cache.endswith("[Task]\nAnd the refund?")
    gssc = TextRenderer(COUNTER, order="gssc").render(layout()).payload["text"]
    assert [ln for ln in gssc.splitlines() if ln.startswith("[")] == [
        "[Role & Policies]", "[Tools]", "[Task]", "[State]", "[Evidence]", "[Context]",
        "[Output]"]
    with pytest.raises(ConfigError, match="order"):
        TextRenderer(COUNTER, order="random")  # type: ignore[arg-type]


def test_text_tokens_and_cost_contract() -> None:
    r = TextRenderer(COUNTER)
    out = r.render(layout())
    assert out.tokens == COUNTER.count(out.payload["text"])
    assert out.tokens <= r.overhead() + sum(r.cost(i) for i in all_items(layout()))
    assert out.payload["text"].startswith("[Role & Policies]\nYou are Atlas.\n\n[Tools]\n")


def test_minimal_has_no_headers() -> None:
    r = TextRenderer(COUNTER, headers=False)
    assert r.format == "minimal" and r.overhead() == 0
    text = r.render(layout()).payload["text"]
    assert "[" not in text.split("\n")[0]
    assert not any(line.startswith("[Role") for line in text.splitlines())
    assert text.startswith("You are Atlas.\n\ntrack_shipment: Where a shipment is.")
    assert text.endswith("And the refund?")


def test_template_placeholders_and_aliases() -> None:
    t = TemplateRenderer("SYS: {{instructions}}\nH:\n{{ history }}\nQ: {{input}}", COUNTER)
    text = t.render(layout()).payload["text"]
    assert text.startswith("SYS: You are Atlas.\nH:\nuser: Where is SHP-1?\n")
    assert text.endswith("Q: And the refund?")
    assert "{{" not in text
    assert t.render(layout()).prefix_hash == t.render(Layout()).prefix_hash


@pytest.mark.parametrize("template", ["{{task}} {{nonsense}}", "no placeholders at all"])
def test_template_errors(template: str) -> None:
    with pytest.raises(ConfigError) as info:
        TemplateRenderer(template, COUNTER)
    if "nonsense" in template:
        assert "'nonsense'" in str(info.value)


def test_template_format_through_the_builder() -> None:
    with pytest.raises(ConfigError, match="template"):
        BuildOptions(format="template")
    b = ContextBuilder(
        [SystemPromptSource("You are Atlas."), UserInputSource(), HistorySource(HISTORY),
         ToolSource([SCHEMA])],
        options=BuildOptions(format="template",
                             template="<sys>{{instructions}}</sys>\n{{context}}\n> {{task}}"))
    r = b.build_sync("And the refund?", max_tokens=500, now=0.0)
    assert r.text.startswith("<sys>You are Atlas.</sys>\nuser: Where is SHP-1?")
    assert r.text.endswith("> And the refund?")
    assert r.tokens == COUNTER.count(r.text) <= 500


def test_text_reserves_the_output_header_only_when_output_may_appear() -> None:
    r = TextRenderer(COUNTER)
    sections = frozenset({"context", "evidence", "task"})
    header = COUNTER.count("[Output]") + 2
    assert r.overhead(sections | {"output"}) - r.overhead(sections) == header
    assert r.overhead() == r.overhead(frozenset(
        {"role", "tools", "context", "state", "evidence", "task", "output"}))


def test_text_builds_reserve_output_framing_only_with_output_instructions() -> None:
    def framing(output: str) -> int:
        b = ContextBuilder([SystemPromptSource("You are Atlas."), UserInputSource(),
                            ToolSource([SCHEMA])],
                           options=BuildOptions(model="gpt-4o", format="text",
                                                output_instructions=output))
        with pytest.raises(BudgetError) as exc:  # a budget below the framing reports it
            b.build_sync("And the refund?", max_tokens=16)
        assert exc.value.required is not None
        return exc.value.required

    assert framing("Answer in one line.") - framing("") == COUNTER.count("[Output]") + 2


@pytest.mark.parametrize("renderer", [OpenAIRenderer, AnthropicRenderer])
def test_an_evidence_line_is_counted_once_and_costs_its_tokens_and_a_line(renderer: type) -> None:
    counted: list[str] = []

    class Counting(ChatCounter):
        def text(self, s: str) -> int:
            counted.append(s)
            return super().text(s)

    chat = Counting(COUNTER)
    r = renderer(chat)
    texts = ["customs hold in Lyon", "The Milano gateway opens at nine.", "customs hold in Lyon"]
    costs = [r.cost(ContextItem(id=f"e{k}", source="kb", content=t, kind="evidence"))
             for k, t in enumerate(texts)]
    assert costs == [COUNTER.count(t) + 1 for t in texts]
    assert counted == texts[:2]  # the same line again is not counted again
