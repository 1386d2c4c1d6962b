"""The verify stage: the count of tokens that repeat the previous request (the prompt-cache
part) and the order in which an over-full render gives items up."""

from __future__ import annotations

import pytest

from loomctx.items import ContextItem, Tier
from loomctx.render.chat import AnthropicRenderer, OpenAIRenderer
from loomctx.render.verify import reused_prefix, weakest
from loomctx.tokens.chat import ChatCounter
from loomctx.tokens.registry import counter_for_model

TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]


def _msgs(n: int, tag: str = "") -> list[dict]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}{tag} " * 5}
            for i in range(n)]


@pytest.fixture
def renderer() -> OpenAIRenderer:
    return OpenAIRenderer(ChatCounter(counter_for_model("gpt-4o").counter, "openai"))


def _total(chat: ChatCounter, payload: dict) -> int:
    return chat.messages(payload["messages"], payload.get("tools"))


@pytest.mark.parametrize(("shared", "n"), [(0, 6), (1, 6), (3, 6), (5, 6), (6, 9), (20, 21)])
def test_reused_tokens_are_the_shared_leading_messages(renderer, shared: int, n: int) -> None:
    chat = renderer.chat
    prev = {"messages": _msgs(shared) + _msgs(4, "-old")[: max(0, 4)], "tools": TOOLS}
    cur = {"messages": _msgs(shared) + _msgs(n - shared, "-new"), "tools": TOOLS}
    expected = chat.tools(TOOLS) + sum(chat.message(m) for m in cur["messages"][:shared])
    assert reused_prefix(renderer, prev, cur, _total(chat, cur)) == expected


def test_nothing_is_reused_without_a_previous_request_or_with_other_tools(renderer) -> None:
    cur = {"messages": _msgs(3), "tools": TOOLS}
    total = _total(renderer.chat, cur)
    assert reused_prefix(renderer, None, cur, total) == 0
    assert reused_prefix(renderer, {"messages": _msgs(3)}, cur, total) == 0
    assert reused_prefix(renderer, cur, cur, total) == total - renderer.chat.reply_priming


def test_anthropic_counts_the_system_blocks_too() -> None:
    chat = ChatCounter(counter_for_model("claude-sonnet-4-5").counter, "anthropic")
    renderer = AnthropicRenderer(chat)
    system = [{"type": "text", "text": "be brief"}]
    prev = {"system": system, "messages": _msgs(4)}
    cur = {"system": system, "messages": [*_msgs(4), *_msgs(2, "-new")]}
    total = chat.messages(cur["messages"], None, system=system)
    expected = chat.system(system) + sum(chat.message(m) for m in cur["messages"][:4])
    assert reused_prefix(renderer, prev, cur, total) == expected
    other = {"system": [{"type": "text", "text": "be verbose"}], "messages": _msgs(4)}
    assert reused_prefix(renderer, other, cur, total) == 0


def _item(id_: str, kind: str, score: float, **kw) -> ContextItem:
    return ContextItem(id=id_, source=kind, content=id_, kind=kind, scores={"composite": score},
                       **kw)


def test_over_budget_drops_volatile_items_before_the_stable_prefix() -> None:
    """A tool or skill scored lower than a passage still outlasts it: dropping it would change
    the start of every later request (the found falsifying example of
    ``test_stable_prefix_survives_a_new_query_and_new_evidence``)."""
    tool, skill = _item("tool:f", "tool", 0.1), _item("skill", "skill", 0.2)
    passage = _item("doc", "evidence", 0.9)
    old, new = (_item(f"h{i}", "message", 0.0, seq=i) for i in range(2))
    assert weakest([tool, skill, passage, old, new]) == [old]
    assert weakest([tool, skill, passage, new]) == [new]
    assert weakest([tool, skill, passage]) == [passage]
    assert weakest([tool, skill]) == [tool]
    assert weakest([_item("sys", "system", 0.0, tier=Tier.P0)]) is None
