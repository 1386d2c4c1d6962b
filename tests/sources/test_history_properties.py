"""Property tests for history validation over random, often broken, tool sequences."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from loomctx.errors import InputError
from loomctx.sources.history import HistorySource
from loomctx.sources.messages import validate_history
from loomctx.sources.protocol import SourceRequest
from loomctx.tokens.registry import counter_for_model

COUNTER = counter_for_model("gpt-4o").counter
CALL_IDS = st.sampled_from(["c1", "c2", "c3"])
GOOD_ARGS = st.one_of(st.just("{}"), st.just('{"a": 1}'), st.just(""),
                      st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
                      st.lists(st.integers(), max_size=2))
ARGS = st.one_of(GOOD_ARGS, GOOD_ARGS, GOOD_ARGS, st.sampled_from(["{bad", 3, None]))
PART = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=4)}),
    st.fixed_dictionaries({"type": st.sampled_from(["image_url", "video"])}),
    st.text(max_size=2))
CONTENT = st.one_of(st.text(max_size=8), st.text(max_size=8), st.none(),
                    st.lists(PART, max_size=2))


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Mostly plausible agent histories with faults mixed in: results that come late, twice or
    never, reused call ids, bad arguments and junk parts."""
    out: list[dict[str, Any]] = []
    last_calls: list[str] = []
    used: list[str] = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["user", "assistant", "calls", "calls", "result", "result",
                                     "result", "empty_calls"]))
        if kind == "user":
            out.append({"role": "user", "content": draw(CONTENT)})
            if draw(st.integers(0, 2)):
                last_calls = []
        elif kind == "assistant":
            out.append({"role": "assistant", "content": draw(st.text(max_size=8))})
        elif kind == "empty_calls":
            out.append({"role": "assistant", "content": "x", "tool_calls": []})
        elif kind == "calls":
            n = draw(st.integers(1, 3))
            fresh = [f"c{len(used) + k}" for k in range(n)]
            ids = draw(st.one_of(st.just(fresh), st.just(fresh), st.just(fresh),
                                 st.lists(CALL_IDS, min_size=1, max_size=2)))
            used += ids
            last_calls = list(ids)
            out.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": c, "type": "function", "function": {"name": "f", "arguments": draw(ARGS)}}
                for c in ids]})
        elif not last_calls and draw(st.integers(0, 5)):
            out.append({"role": "user", "content": "next"})
        else:
            pool = last_calls or used or ["c0"]
            cid = draw(st.one_of(*[st.sampled_from(pool)] * 4, CALL_IDS))
            if cid in last_calls and draw(st.integers(0, 3)):
                last_calls.remove(cid)
            out.append({"role": "tool", "tool_call_id": cid, "content": "r"})
    return out


def collect(src: HistorySource) -> list[Any]:
    req = SourceRequest(query="", now=0.0, counter=COUNTER, budget=1000)
    return list(asyncio.run(src.collect(req)))


def check_sent(sent: list[dict[str, Any]]) -> None:
    """OpenAI's structural rules: every call answered right after it, once; no orphans."""
    waiting: list[str] = []
    for m in sent:
        if m["role"] == "tool":
            assert m["tool_call_id"] in waiting, f"orphan or repeated result {m!r}"
            waiting.remove(m["tool_call_id"])
            continue
        assert not waiting, f"calls {waiting} left unanswered before {m!r}"
        if m["role"] == "assistant" and "tool_calls" in m:
            assert m["tool_calls"], "tool_calls must never be empty"
            for c in m["tool_calls"]:
                assert isinstance(c["function"]["arguments"], str)
                json.loads(c["function"]["arguments"])
            waiting = [c["id"] for c in m["tool_calls"]]
    assert not waiting


@settings(max_examples=300, deadline=None)
@given(histories())
def test_accepted_histories_render_valid_tool_sequences(history: list[dict[str, Any]]) -> None:
    try:
        src = HistorySource(history)
    except InputError as exc:
        assert exc.where is not None and exc.where.startswith("history:")
        return
    items = collect(src)
    sent = [i.message for i in items if not i.metadata.get("pending")]
    check_sent(sent)
    # pending items are exactly the trailing group still waiting for results
    pending = [i for i in items if i.metadata.get("pending")]
    if pending:
        assert src.pending_calls and items[-len(pending):] == pending
    assert [i.seq for i in items] == sorted(i.seq for i in items)


@settings(max_examples=300, deadline=None)
@given(histories(), st.integers(0, 12))
def test_incremental_validation_matches_one_shot(history: list[dict[str, Any]],
                                                 split: int) -> None:
    try:
        whole: list[dict[str, Any]] | str = validate_history(history)
    except InputError as exc:
        whole = str(exc)
    src = HistorySource()
    try:
        src.extend(history[:split])
        src.extend(history[split:])
        parts: list[dict[str, Any]] | str = [dict(i.message or {}, id=i.id, group=i.group)
                                            for i in src.items]
    except InputError as exc:
        parts = str(exc)
    if isinstance(whole, str):
        assert parts == whole
    else:
        assert parts == [{**{k: v for k, v in m.items() if k in ("role", "content", "name",
                                                                 "tool_calls", "tool_call_id")
                             and v is not None}, "id": m["id"], "group": m.get("group")}
                         for m in whole]


@settings(max_examples=200, deadline=None)
@given(histories(), histories())
def test_a_rejected_batch_changes_nothing(first: list[dict[str, Any]],
                                          batch: list[dict[str, Any]]) -> None:
    try:
        src = HistorySource(first)
    except InputError:
        return
    before = [(i.id, i.metadata) for i in collect(src)]
    state = (src.pending_calls, dict(src.interrupted_calls), len(src))
    try:
        src.extend(batch)
    except InputError:
        assert [(i.id, i.metadata) for i in collect(src)] == before
        assert (src.pending_calls, dict(src.interrupted_calls), len(src)) == state
