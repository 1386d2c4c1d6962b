"""The verify stage's count of tokens that repeat the previous request (the prompt-cache part)."""

from __future__ import annotations

import pytest

from loomctx.render.chat import AnthropicRenderer, OpenAIRenderer
from loomctx.render.verify import reused_prefix
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
