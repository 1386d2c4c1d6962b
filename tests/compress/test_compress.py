"""Compression: truncation with a marker, section-priority cuts, the extractive summarizer."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from loomctx.compress.history import Compactor, unit_start
from loomctx.compress.summarize import ExtractiveSummarizer, Summarizer
from loomctx.compress.truncate import MARKER, SECTION_MARKER, truncate_item, truncate_sections
from loomctx.items import ContextItem
from loomctx.tokens.registry import counter_for_model

COUNTER = counter_for_model("gpt-4o").counter
LOG = "\n".join(f"2024-05-0{i % 8 + 1} scan SHP-{40000 + i} Lyon cross-dock 海关扣留"
                for i in range(200))


def cost(it: ContextItem) -> int:
    return COUNTER.count(it.content) + 4


@settings(max_examples=60, deadline=None, derandomize=True)
@given(target=st.integers(0, 3000), start=st.integers(0, 5000))
def test_truncated_item_fits_its_target_and_keeps_a_prefix(target: int, start: int) -> None:
    text = LOG[start:]
    it = ContextItem(id="log", source="L1_recent", content=text, kind="message", role="tool",
                     message={"role": "tool", "tool_call_id": "c1", "content": text})
    cut = truncate_item(it, target, COUNTER, cost)
    if cut is None:
        assert target < 40 or not text  # nothing useful fits only for tiny targets
        return
    assert cut.tokens == cost(cut) <= target
    head, marker = cut.content.split("\n…[truncated: ")
    assert text.startswith(head)
    assert marker.endswith("full text id=log]")
    assert cut.message == {"role": "tool", "tool_call_id": "c1", "content": cut.content}
    assert cut.metadata["truncated_from"] == COUNTER.count(text)
    assert it.content == text  # the original is untouched
    assert f"of {COUNTER.count(text)} tokens shown" in cut.content


@settings(max_examples=60, deadline=None, derandomize=True)
@given(target=st.integers(0, 3000), start=st.integers(0, 5000),
       tail=st.sampled_from([0.25, 0.5, 0.9]))
@example(target=3000, start=5000, tail=0.5)  # the whole text fits: head and tail must not meet
def test_a_cut_with_a_tail_keeps_the_head_and_the_last_whole_lines(
        target: int, start: int, tail: float) -> None:
    """A tool's output cut in the window shows its head and its latest lines, never more than
    the target, and nothing twice."""
    text = LOG[start:]
    it = ContextItem(id="log", source="L1_recent", content=text, kind="message", role="tool",
                     message={"role": "tool", "tool_call_id": "c1", "content": text})
    cut = truncate_item(it, target, COUNTER, cost, tail=tail)
    if cut is None:
        assert target < 40 or not text
        return
    assert cut.tokens == cost(cut) <= target
    head, rest = cut.content.split("\n…[truncated: ")
    marker, _, end = rest.partition("]")
    assert text.startswith(head) and marker.endswith("full text id=log")
    shown = int(marker.split(" of ")[0])
    if end:  # whole lines from the end, after the head
        end = end.removeprefix("\n")
        assert text.endswith(end) and len(head) + len(end) <= len(text.rstrip("\n"))
        assert text[len(text) - len(end) - 1] == "\n"  # starts at a line
        assert COUNTER.count(end) <= tail * target
    assert shown == COUNTER.count(head) + COUNTER.count(end)


def test_a_tail_is_only_whole_lines() -> None:
    """A last line longer than the tail's share leaves the room to the head."""
    text = "start\n" + "x " * 3000
    it = ContextItem(id="t", source="h", content=text, kind="message", role="tool",
                     message={"role": "tool", "tool_call_id": "c1", "content": text})
    cut = truncate_item(it, 200, COUNTER, cost, tail=0.5)
    assert cut is not None and cut.content.endswith("id=t]") and cut.tokens <= 200


def test_truncate_item_refuses_list_content() -> None:
    msg = {"role": "user", "content": [{"type": "text", "text": LOG}]}
    it = ContextItem(id="u", source="h", content=LOG, kind="message", role="user", message=msg)
    assert truncate_item(it, 200, COUNTER, cost) is None


def test_marker_names_shown_and_total_tokens() -> None:
    it = ContextItem(id="doc#3", source="k", content=LOG, kind="evidence")
    cut = truncate_item(it, 100, COUNTER, cost)
    assert cut is not None
    shown = COUNTER.count(cut.content.split("\n…[truncated")[0])
    assert MARKER.format(shown=shown, total=COUNTER.count(LOG), id="doc#3") in cut.content


SECTIONED = ("[Role & Policies]\nYou are Atlas. Never invent tracking numbers.\n\n"
             "[Task]\nWhat is the refund policy?\n\n"
             "[Evidence]\n" + "Refunds are issued within 30 days. " * 40 + "\n\n"
             "[Context]\n" + LOG + "\n")


@pytest.mark.parametrize("limit", [40, 120, 400, 900, 5000])
def test_truncate_sections_fits_and_cuts_context_first(limit: int) -> None:
    out = truncate_sections(SECTIONED, limit, COUNTER)
    assert COUNTER.count(out) <= limit
    if COUNTER.count(SECTIONED) <= limit:
        assert out == SECTIONED
        return
    if limit >= 120:  # the role and the task survive while anything else can give way
        assert "You are Atlas" in out and "What is the refund policy?" in out
        assert "[Context]" not in out or SECTION_MARKER["zh"] in out
    if limit == 900:
        assert "Refunds are issued" in out  # evidence outranks context


def test_extractive_summary_prefers_decisions_and_never_repeats() -> None:
    items = [
        ContextItem(id=f"m{i}", source="L1_recent", content=text, kind="message", role=role)
        for i, (role, text) in enumerate([
            ("user", "hello there. how are you today?"),
            ("assistant", "Fine, thanks for asking."),
            ("user", "We decided to move all Hamburg pickups to Tuesdays. Remember that."),
            ("tool", "scan SHP-1 arrived\nscan SHP-1 arrived\nscan SHP-1 arrived"),
        ])
    ]
    s = ExtractiveSummarizer()
    assert isinstance(s, Summarizer)
    text = asyncio.run(s.summarize(items, 40, COUNTER))
    assert COUNTER.count(text) <= 40
    assert "- user: We decided to move all Hamburg pickups to Tuesdays." in text
    lines = text.splitlines()
    assert len(lines) == len(set(lines))
    assert asyncio.run(s.summarize([], 100, COUNTER)) == ""


@settings(max_examples=60, deadline=None, derandomize=True)
@given(texts=st.lists(st.text(min_size=0, max_size=300), max_size=8),
       budget=st.integers(0, 200))
def test_extractive_summary_respects_its_budget(texts: list[str], budget: int) -> None:
    items = [ContextItem(id=f"m{i}", source="h", content=t, kind="message", role="user")
             for i, t in enumerate(texts)]
    text = asyncio.run(ExtractiveSummarizer().summarize(items, budget, COUNTER))
    assert COUNTER.count(text) <= budget
    for line in text.splitlines():
        assert line.startswith("- user: ")


def test_a_summary_of_n_messages_has_at_most_n_bullets() -> None:
    # Several sentences of one message are one bullet: "7 earlier messages" never lists 9.
    items = [ContextItem(id=f"m{i}", source="h", kind="message", role="user",
                         content=f"Order {i} ships Monday. It weighs {i + 3} kg. Invoice {i} paid.")
             for i in range(7)]
    text = asyncio.run(ExtractiveSummarizer().summarize(items, 400, COUNTER))
    lines = text.splitlines()
    assert 1 <= len(lines) <= 7
    assert any(line.count(".") >= 2 for line in lines)  # sentences of one message, one line


def _walked_start(compactor: Compactor, source: str, items: list[ContextItem], room: int,
                  gap: int, cost: Callable[[ContextItem], int]) -> int:
    """The window start as first written: unit by unit from the newest, summing costs."""
    spent, fit, i = 0, len(items), len(items) - 1
    while i >= 0:
        j = i
        while j > 0 and not unit_start(items, j):
            j -= 1
        unit = sum(cost(it) for it in items[j:i + 1])
        if spent + unit > room:
            break
        spent, fit, i = spent + unit, j, j - 1
    if fit == 0:
        return 0
    later = [p for p in compactor.points(source, items, gap) if p >= fit]
    return min(later) if later else fit


@settings(max_examples=80, deadline=None)
@given(steps=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 400), st.booleans(),
                                st.booleans()), min_size=1, max_size=40),
       gap=st.sampled_from([64, 128, 512]))
def test_the_kept_sums_find_the_start_the_walk_finds(
        steps: list[tuple[int, int, bool, bool]], gap: int) -> None:
    """Messages arrive a few at a time (some as tool-call groups, some free); the history is
    sometimes cut at its front; the room moves: every build, the start from the kept sums is
    the one the walk over every message finds."""
    compactor, fresh = Compactor(), 0
    items: list[ContextItem] = []

    def cost(it: ContextItem) -> int:
        return len(it.content) // 4

    for new, room, grouped, cut in steps:
        for _ in range(new):
            fresh += 1
            items.append(ContextItem(id=f"m{fresh}", source="h", content="w " * (fresh * 7 % 90),
                                     kind="message", group=f"g{fresh // 3}" if grouped else None))
        if cut and len(items) > 4:
            items = items[2:]  # the oldest messages dropped (max_messages)
        got = compactor.window_start("h", items, room, gap,
                                     compactor.sums("h", items, cost, None)) if items else 0
        assert got == _walked_start(Compactor(), "h", items, room, gap, cost)


def test_a_turn_measures_only_the_messages_added_since_the_last() -> None:
    compactor = Compactor()
    items = [ContextItem(id=f"m{i}", source="h", content="word " * 20, kind="message")
             for i in range(200)]
    counted: list[str] = []

    def cost(it: ContextItem) -> int:
        counted.append(it.id)
        return 25

    compactor.sums("h", items, cost, None)
    assert len(counted) == 200
    counted.clear()
    items.append(ContextItem(id="m200", source="h", content="new", kind="message"))
    sums = compactor.sums("h", items, cost, None)
    assert counted == ["m200"] and sums.prefix[-1] == 25 * 201
    assert compactor.window_start("h", items, 10_000, 256, sums) == \
        _walked_start(Compactor(), "h", items, 10_000, 256, lambda it: 25)
    counted.clear()
    compactor.sums("h", items, cost, (64, 3))  # clipped otherwise: summed again
    assert len(counted) == 201
    counted.clear()
    compactor.sums("h", items[2:], cost, None)  # the front dropped: summed again
    assert len(counted) == 199
