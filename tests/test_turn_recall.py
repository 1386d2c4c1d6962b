"""Recall inside the agent loop: what a turn recalls stays in place (a recall note), a question
whose evidence is out of view gets the room the window leaves, and ``build(question)`` after
adding the question builds the turn."""

from __future__ import annotations

import itertools

import pytest

from loomctx import BuildOptions, ConfigError, HashingEmbedder, Session, check_request
from loomctx.render.chat import EVIDENCE_HEADER

FACTS = [f"Fact {i}: the depot in city{i} keeps spare part kind{i} on shelf S{i}." for i in
         range(30)]


def _session(model: str = "gpt-4o", **kw) -> Session:
    s = Session(embedder=HashingEmbedder(dim=64), clock=lambda: 1_700_000_000.0, model=model,
                **kw)
    for i, fact in enumerate(FACTS):
        s.add_message_sync("user", fact, id=f"f{i}")
        s.add_message_sync("assistant", f"Noted {i}.", id=f"a{i}")
    for i in range(150):  # recent chatter, more than the window holds
        s.add_message_sync("user", f"Small talk line {i} about the weather and lunch plans.")
        s.add_message_sync("assistant", f"Sure, line {i}.")
    return s


def _row(report, item_id: str):
    return next(r for r in report.items if r.id == item_id and r.source == "L4_semantic")


def _texts(payload: dict) -> str:
    return "\n".join(str(m.get("content")) for m in payload["messages"])


def _summary(payload: dict) -> list:
    return [m for m in payload["messages"] if str(m.get("content")).startswith("Summary of")]


@pytest.mark.parametrize("model", ["gpt-4o", "claude-sonnet-4-5"])
def test_a_turns_evidence_stays_in_place_on_the_next_requests(model):
    s = _session(model)
    results = []
    for i in range(8):
        s.add_message_sync("user", f"Tell me the shelf of spare part kind{i} in city{i}.")
        results.append(s.build_sync(max_tokens=3000))
        s.add_message_sync("assistant", f"Shelf S{i}.")
    appended = 0
    for prev, cur in itertools.pairwise(results):
        assert cur.tokens <= 3000
        assert check_request(cur.rendered.format, cur.payload) == []
        if model != "gpt-4o" or _summary(prev.payload) != _summary(cur.payload):
            continue
        # Between compaction steps the previous request, its evidence included, is the start
        # of the next one.
        messages = prev.payload["messages"]
        assert cur.payload["messages"][:len(messages)] == messages
        appended += 1
    if model == "gpt-4o":
        assert appended >= 4
    notes = [m for m in results[-1].payload["messages"][:-1]
             if str(m.get("content")).startswith(EVIDENCE_HEADER)]
    if model == "gpt-4o":
        assert notes  # earlier turns' evidence, kept in place
    recalled = [r for r in results[-1].report.items if r.reason == "recalled"]
    assert recalled and all(r.included and r.position is not None for r in recalled)


def test_a_question_out_of_view_gets_the_room_the_window_leaves():
    options = BuildOptions(model="gpt-4o")
    s = _session(options=options)
    s.add_message_sync("user", "Which shelf keeps spare part kind7 in city7?")
    r = s.build_sync(max_tokens=2000)
    used = sum(x.tokens or 0 for x in r.report.items
               if x.included and x.source == "L4_semantic")
    assert used > options.volatile_share * 2000  # more than the old fixed pool
    assert _row(r.report, "f7").included
    # Chatter is no question: its evidence keeps to the volatile share (stretched to one unit).
    s2 = _session(options=options)
    s2.add_message_sync("user", "Small talk again, weather and lunch.")
    r2 = s2.build_sync(max_tokens=2000)
    chat = sum(x.tokens or 0 for x in r2.report.items
               if x.included and x.source == "L4_semantic")
    assert chat < used


def test_recall_share_lets_a_question_compact_the_window_for_its_evidence():
    kept = _session(options=BuildOptions(model="gpt-4o"))
    wide = _session(options=BuildOptions(model="gpt-4o", recall_share=0.6))
    for s in (kept, wide):
        s.add_message_sync("user", "Which shelf keeps spare part kind5 in city5?")
    a = kept.build_sync(max_tokens=2000)
    b = wide.build_sync(max_tokens=2000)

    def window(r):
        return sum(1 for x in r.report.items if x.included and x.reason == "window")

    assert window(b) < window(a)
    assert b.tokens <= 2000


def test_recall_share_is_validated():
    with pytest.raises(ConfigError, match="recall_share"):
        BuildOptions(recall_share=1.5)


def test_build_for_the_question_just_added_shows_it_once():
    s = _session()
    question = "Which shelf keeps spare part kind9?"
    s.add_message_sync("user", question)
    r = s.build_sync(question, max_tokens=1500)
    assert _texts(r.payload).count(question) == 1
    assert r.payload["messages"][-1] == {"role": "user", "content": question}
    # A question that is not the last message is still a question build.
    q = s.build_sync("Where is kind2?", max_tokens=1500)
    assert q.payload["messages"][-1]["content"] == "Where is kind2?"
    assert _texts(q.payload).count(question) <= 1
