"""Prompt-cache prefix reuse between consecutive requests."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from loomctx.errors import ConfigError
from loomctx.eval.cache import (
    PrefixReuse,
    canonical,
    prefix_reuse,
    reuse_ceiling,
    reuse_series,
    segments,
    summarize,
)
from loomctx.tokens.registry import counter_for_model


class CharCounter:
    """One token per character, so every expected number can be worked out by hand."""

    name = "chars"
    exact = True

    def count(self, text: str) -> int:
        return len(text)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [len(t) for t in texts]

    def truncate(self, text: str, max_tokens: int) -> str:
        return text[:max_tokens]


CHARS = CharCounter()
TOOL = {"type": "function", "function": {"name": "track", "parameters": {"type": "object"}}}


def _msg(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "content": content}


def _request(*contents: str) -> dict[str, Any]:
    messages = [_msg("system", "You route parcels.")]
    messages += [_msg("user" if i % 2 == 0 else "assistant", c) for i, c in enumerate(contents)]
    return {"tools": [TOOL], "messages": messages}


def _size(payload: dict[str, Any]) -> int:
    return sum(len(text) for _, text in segments(payload))


def test_identical_requests_reuse_everything() -> None:
    request = _request("Where is SHP-1?", "In Lyon.", "And SHP-2?")
    reuse = prefix_reuse(request, request, CHARS)
    assert reuse == PrefixReuse(_size(request), _size(request))
    assert reuse.share == 1.0


def test_first_request_reuses_nothing() -> None:
    request = _request("Where is SHP-1?")
    assert prefix_reuse(None, request, CHARS) == PrefixReuse(0, _size(request))


def test_appended_message_reuses_the_old_request_whole() -> None:
    old = _request("Where is SHP-1?", "In Lyon.")
    new = _request("Where is SHP-1?", "In Lyon.", "And SHP-2?")
    reuse = prefix_reuse(old, new, CHARS)
    assert reuse.reused == _size(old)
    assert reuse.total == _size(new)
    assert reuse.share == pytest.approx(_size(old) / _size(new))


def test_changed_tool_schema_invalidates_everything_after_it() -> None:
    old = _request("Where is SHP-1?", "In Lyon.")
    other_tool = {"type": "function", "function": {"name": "trace"}}
    new = {**old, "tools": [other_tool]}
    reuse = prefix_reuse(old, new, CHARS)
    common = len('{"function":{"name":"trac')
    assert reuse.reused == common
    assert reuse.share == pytest.approx(common / _size(new))


def test_changed_first_message_keeps_only_the_tools_and_the_common_text() -> None:
    old = _request("Where is SHP-1?", "In Lyon.")
    new = {**old, "messages": [_msg("system", "Xou route parcels."), *old["messages"][1:]]}
    reuse = prefix_reuse(old, new, CHARS)
    tools = len(canonical(TOOL))
    assert reuse.reused == tools + len('{"content":"')
    tokens = counter_for_model("gpt-4o").counter
    long_old = _request(*["word " * 200] * 6)
    long_new = {**long_old, "tools": [], "messages": [_msg("system", "A new prompt."),
                                                     *long_old["messages"][1:]]}
    assert prefix_reuse(long_old, long_new, tokens).share < 0.01


def test_sliding_window_reuses_only_the_system_prompt() -> None:
    old = _request("one " * 50, "two " * 50, "three " * 50)
    new = {"tools": old["tools"], "messages": [old["messages"][0], *old["messages"][2:],
                                               _msg("assistant", "four " * 50)]}
    reuse = prefix_reuse(old, new, CHARS)
    assert reuse.reused == len(canonical(TOOL)) + len(canonical(old["messages"][0])) + len(
        '{"content":"')
    assert 0.0 < reuse.share < 0.2


def test_key_order_does_not_count_as_a_change() -> None:
    old = {"messages": [{"role": "user", "content": "hi"}]}
    new = {"messages": [{"content": "hi", "role": "user"}]}
    assert prefix_reuse(old, new, CHARS).share == 1.0


def test_anthropic_sections_are_read_tools_system_messages() -> None:
    old = {"tools": [{"name": "track"}], "system": "Route parcels.",
           "messages": [_msg("user", "Where is SHP-1?")]}
    new = {**old, "system": "Route parcels fast."}
    reuse = prefix_reuse(old, new, CHARS)
    assert reuse.reused == len(canonical(old["tools"][0])) + len('"Route parcels')
    assert [s for s, _ in segments(new)] == ["tools", "system", "messages"]
    blocks = {**old, "system": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    assert [s for s, _ in segments(blocks)] == ["tools", "system", "system", "messages"]


def test_a_different_section_at_the_same_position_shares_nothing() -> None:
    old = {"tools": [{"name": "x"}], "messages": [_msg("user", "hi")]}
    new = {"messages": [_msg("user", "hi")]}
    assert prefix_reuse(old, new, CHARS).reused == 0


def test_payload_without_prompt_keys_is_refused() -> None:
    with pytest.raises(ConfigError, match="needs one of the keys"):
        segments({"model": "gpt-4o"})


def test_series_and_summary() -> None:
    first = _request("a")
    second = _request("a", "b")
    third = {"messages": [_msg("user", "zzz")]}
    series = reuse_series([first, second, third], CHARS)
    assert series[0].reused == 0
    assert series[1].reused == _size(first)
    assert series[2].reused == 0
    summary = summarize(series)
    assert summary["requests"] == 3
    assert summary["mean"] == pytest.approx((series[1].share + 0.0) / 2)
    assert summary["min"] == 0.0
    weighted = series[1].reused / (series[1].total + series[2].total)
    assert summary["weighted"] == pytest.approx(weighted)
    assert series[2].total == len('{"content":"zzz","role":"user"}')
    with pytest.raises(ConfigError):
        summarize(series[:1])


def _schedules(ends: Sequence[int], inputs: Sequence[int], room: int, sizes: Sequence[int],
               ) -> list[list[int]]:
    """Every start sequence (never going back) whose windows fit ``room``."""
    out: list[list[int]] = [[]]
    for end, last in zip(ends, inputs, strict=True):
        out = [[*s, k] for s in out for k in range(s[-1] if s else 0, last + 1)
               if sum(sizes[k:end]) <= room]
    return out


def _mean_by_hand(starts: list[int], ends: Sequence[int], sizes: Sequence[int], fixed: int,
                  ) -> float:
    shares = []
    for j in range(1, len(ends)):
        total = fixed + sum(sizes[starts[j]:ends[j]])
        kept = fixed + (sum(sizes[starts[j]:ends[j - 1]]) if starts[j] == starts[j - 1] else 0)
        shares.append(kept / total)
    return sum(shares) / len(shares)


def test_the_ceiling_is_the_best_of_every_window_schedule() -> None:
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(3, 9)
        sizes = [rng.randint(1, 30) for _ in range(n)]
        ends = sorted(rng.sample(range(1, n + 1), rng.randint(2, min(5, n))))
        inputs = [rng.randint(max(0, e - 2), e - 1) for e in ends]
        room = rng.randint(max(sizes), sum(sizes))
        fixed = rng.randint(0, 20)
        schedules = _schedules(ends, inputs, room, sizes)
        if not schedules:
            with pytest.raises(ConfigError, match="no window holds them"):
                reuse_ceiling(ends, inputs, sizes, sizes, fixed, room)
            continue
        best = max(_mean_by_hand(s, ends, sizes, fixed) for s in schedules)
        assert reuse_ceiling(ends, inputs, sizes, sizes, fixed, room) == pytest.approx(best)


def test_the_ceiling_by_hand_a_window_that_cannot_show_all() -> None:
    # three requests over messages of 10 tokens and a fixed part of 5; the third cannot show
    # all four (room 30). Best: leave message 0 out from the first request and never compact
    ends, inputs, sizes = [2, 3, 4], [1, 2, 3], [10, 10, 10, 10]
    assert reuse_ceiling(ends, inputs, sizes, sizes, 5, 30) == pytest.approx(
        (15 / 25 + 25 / 35) / 2)
    # no window may start at message 1 (a tool's result): start at 0, then compact to message
    # 3 at the last request (which then repeats only the fixed part)
    assert reuse_ceiling(ends, inputs, sizes, sizes, 5, 30, [True, False, True, True]) == \
        pytest.approx((25 / 35 + 5 / 15) / 2)


def test_the_ceiling_refuses_inputs_that_disagree() -> None:
    with pytest.raises(ConfigError, match="one entry per message"):
        reuse_ceiling([1, 2], [0, 1], [1, 1], [1], 0, 10)
    with pytest.raises(ConfigError, match="two requests or more"):
        reuse_ceiling([1], [0], [1], [1], 0, 10)
    with pytest.raises(ConfigError, match="ends never going back"):
        reuse_ceiling([2, 1], [0, 0], [1, 1], [1, 1], 0, 10)
