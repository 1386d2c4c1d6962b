"""What a build re-renders every turn is counted and laid out once: the OpenAI renderer keeps
each stored history message's token count, and a build's final items are laid out once for
its render, its recall note and its report. Same results as without the caches."""

from __future__ import annotations

from typing import Any

import pytest

from loomctx.items import ContextItem, Tier
from loomctx.render.chat import OpenAIRenderer
from loomctx.render.layout import LayoutOnce, layout
from loomctx.render.validate_openai import check_openai
from loomctx.sources.history import HistorySource
from loomctx.tokens.chat import ChatCounter
from loomctx.tokens.registry import counter_for_model

COUNTER = counter_for_model("gpt-4o").counter


def _items(n: int) -> list[ContextItem]:
    hist = HistorySource([{"id": f"m{i}", "role": "user" if i % 2 == 0 else "assistant",
                           "content": f"turn {i} about the invoice run"} for i in range(n)])
    system = ContextItem(id="system", source="s", content="Be brief.", kind="system",
                         tier=Tier.P0)
    return [system, *hist.items]


def test_history_messages_are_counted_once_across_renders(
        monkeypatch: pytest.MonkeyPatch) -> None:
    chat = ChatCounter(COUNTER, "openai")
    renderer = OpenAIRenderer(chat)
    items = _items(50)
    first = renderer.render(layout(items))
    counted: list[Any] = []
    real = chat.message

    def counting(msg: Any) -> int:
        counted.append(msg)
        return real(msg)

    monkeypatch.setattr(chat, "message", counting)
    again = renderer.render(layout([*items, *_items(51)[51:]]))
    # Only the system message (for the total and the stable prefix) and the one new history
    # message are counted again.
    assert sorted(m["content"] for m in counted) == ["Be brief.", "Be brief.",
                                                     "turn 50 about the invoice run"]
    assert first.tokens == ChatCounter(COUNTER, "openai").messages(first.payload["messages"])
    assert again.tokens == ChatCounter(COUNTER, "openai").messages(again.payload["messages"])


def test_layout_once_lays_the_same_items_out_once() -> None:
    place = LayoutOnce("Answer in one line.")
    items = _items(6)
    lay = place(items)
    assert place(list(items)) is lay  # the same objects: the same layout
    assert lay == layout(items, "Answer in one line.")
    fewer = place(items[:-1])
    assert fewer is not lay and fewer == layout(items[:-1], "Answer in one line.")
    copies = [ContextItem(**{f: getattr(it, f) for f in it.__slots__}) for it in items]
    assert place(copies) is not fewer  # equal but other objects: laid out again


def test_plain_messages_pass_and_odd_ones_are_still_refused() -> None:
    ok = {"messages": [{"role": "system", "content": "Be brief."},
                       {"role": "user", "content": "hi"},
                       {"role": "assistant", "content": "hello"}]}
    assert check_openai(ok) == []
    for bad in ({"role": "tool", "content": "no call id"},
                {"role": "user", "content": "x", "tool_calls": []},
                {"role": "narrator", "content": "x"},
                {"role": "user", "content": ""} | {"content": None}):
        assert check_openai({"messages": [{"role": "user", "content": "hi"}, bad]}), bad
