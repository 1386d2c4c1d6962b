"""Recall inside the agent loop: a question whose evidence is out of view gets room for it, a
wide question's evidence stays in place as a recall note while the window holds it, the window
yields once the conversation keeps asking about what is out of view, and ``build(question)``
after adding the question builds the turn."""

from __future__ import annotations

import pytest

from loomctx import BuildOptions, ConfigError, HashingEmbedder, Session, check_request
from loomctx.budget.manager import BudgetManager
from loomctx.buildstate import BuildState
from loomctx.items import ContextItem
from loomctx.render.chat import EVIDENCE_HEADER
from loomctx.select.window import INPUT_SOURCE
from loomctx.text.need import need_of

NAMES = ["alder", "birch", "cedar", "dogwood", "elm", "fir", "ginkgo", "hazel", "ironwood",
         "juniper", "larch", "maple", "nutmeg", "oak", "pine", "quince", "rowan", "spruce",
         "tamarack", "umbrella", "viburnum", "willow", "yew", "zelkova"]
FACTS = [f"Remember: the {n} crate sits at dock {i} behind gate {100 + i}." for i, n in
         enumerate(NAMES)]


def _session(model: str = "gpt-4o", **kw) -> Session:
    s = Session(embedder=HashingEmbedder(dim=1024), clock=lambda: 1_700_000_000.0, model=model,
                **kw)
    for i, fact in enumerate(FACTS):
        s.add_message_sync("user", fact, id=f"f{i}")
        s.add_message_sync("assistant", f"Noted {i}.", id=f"a{i}")
    for i in range(150):  # recent chatter, more than the window holds
        s.add_message_sync("user", f"Small talk line {i} about the weather, lunch plans.")
        s.add_message_sync("assistant", f"Sure, line {i}.")
    return s


def _ask(i: int) -> str:
    """A question that shares no word with the earlier ones (only its name with its fact)."""
    return f"Where's the {NAMES[i]} crate, which dock?"


def _row(report, item_id: str):
    return next(r for r in report.items if r.id == item_id and r.source == "L4_semantic")


def _texts(payload: dict) -> str:
    return "\n".join(str(m.get("content")) for m in payload["messages"])


def _summary(payload: dict) -> list:
    return [m for m in payload["messages"] if str(m.get("content")).startswith("Summary of")]


def _evidence_block(message: dict) -> bool:
    return message["role"] == "system" and str(message["content"]).startswith(EVIDENCE_HEADER)


def test_a_question_out_of_view_finds_its_evidence_in_a_turn():
    s = _session()
    s.add_message_sync("user", _ask(7))
    r = s.build_sync(max_tokens=2000)
    assert _row(r.report, "f7").included
    assert FACTS[7] in _texts(r.payload)
    assert r.tokens <= 2000


def _after_a_compaction_step(s: Session, budget: int) -> None:
    """Chat until the window compacts: it then has room to spare for a while."""
    first = None
    for i in range(200):
        s.add_message_sync("user", f"More small talk {i}, weather, lunch.")
        report = s.build_sync(max_tokens=budget).report
        start = sum(1 for r in report.items if r.reason == "compacted")
        s.add_message_sync("assistant", f"Sure {i}.")
        if first is None:
            first = start
        elif start > first + 2:  # the window start moved on by a step, not by one turn
            return
    pytest.fail("the window never compacted")


@pytest.mark.parametrize("model", ["gpt-4o", "claude-sonnet-4-5"])
def test_a_wide_questions_evidence_stays_in_place_while_the_window_holds_it(model):
    s = _session(model, options=BuildOptions(model=model, recall_share=0.0))
    _after_a_compaction_step(s, 3000)
    s.add_message_sync("user", _ask(0))
    first = s.build_sync(max_tokens=3000)
    assert _row(first.report, "f0").included
    # The model calls a tool; the next request starts with the first one, evidence included.
    s.add_message_sync("assistant", None, tool_calls=[{
        "id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}])
    s.add_message_sync("tool", "gate 100 is open", tool_call_id="c1")
    second = s.build_sync(max_tokens=3000)
    assert second.tokens <= 3000
    assert check_request(second.rendered.format, second.payload) == []
    if model == "gpt-4o":
        before = first.payload["messages"]
        assert second.payload["messages"][:len(before)] == before
        assert _evidence_block(before[-2])
    else:  # the same text, in the first user turn's blocks
        assert FACTS[0] in str(second.payload["messages"])
    row = _row(second.report, "f0")
    assert row.included and row.reason == "recalled" and row.position is not None


def test_chatter_keeps_to_the_volatile_share():
    options = BuildOptions(model="gpt-4o")
    s = _session(options=options)
    s.add_message_sync("user", "Small talk again, weather, lunch.")
    r = s.build_sync(max_tokens=2000)
    used = sum(x.tokens or 0 for x in r.report.items
               if x.included and x.source == "L4_semantic")
    best = max((x.tokens or 0 for x in r.report.items if x.source == "L4_semantic"), default=0)
    assert used <= max(options.volatile_share * 2000, min(best, 3 * options.volatile_share
                                                            * 2000))


def _state(need: float, question: str, input_id: str) -> BuildState:
    asked = need_of(question)
    st = BuildState(question=asked.text, asks=asked.asks, turn=True, now=0.0,
                    allocation=BudgetManager().allocate(2000))
    st.available = 2000
    st.recall_need = need
    st.recall_said = need  # what is out of view was said, not a tool's output
    st.candidates[INPUT_SOURCE] = [ContextItem(id=input_id, source=INPUT_SOURCE,
                                               content=question, kind="input")]
    return st


def test_the_window_yields_once_most_of_the_latest_turns_asked_what_is_out_of_view():
    s = _session(options=BuildOptions(model="gpt-4o", recall_share=0.8))
    window = s.builder.window
    reserves = []
    for i, (need, text) in enumerate([(0.9, "where is the crate?"), (0.9, "and the crate there?"),
                                      (0.2, "ok."), (0.9, "and the gate then?"),
                                      (0.9, "and the dock after?")]):
        st = _state(need, text, f"u{i}")
        st.recall_wide = window.wide(st)
        reserves.append(window.reserve(st))
        # A tool step of the same turn is not counted again.
        again = _state(need, text, f"u{i}")
        assert window.wide(again) == st.recall_wide
    # Wide turns: 1st, 2nd, 4th, 5th. The window yields from the third wide one of the latest
    # four, by the need times recall_share of the budget.
    assert reserves[:3] == [0, 0, 0]
    assert reserves[3] == int(0.9 * 0.8 * 2000)
    assert reserves[4] == int(0.9 * 0.8 * 2000)
    # A question none of whose best matches is in view yields at once.
    fresh = _session(options=BuildOptions(model="gpt-4o", recall_share=0.8)).builder.window
    st = _state(1.0, "where is the crate?", "n0")
    st.recall_wide = fresh.wide(st)
    assert fresh.reserve(st) == 0  # none of them the session's own: knowledge, say
    st.recall_own = True
    assert fresh.reserve(st) == int(0.8 * 2000)
    kept = _session(options=BuildOptions(model="gpt-4o", recall_share=0.0)).builder.window
    for i in range(4):
        st = _state(0.9, "where is the crate?", f"k{i}")
        st.recall_wide = kept.wide(st)
        assert kept.reserve(st) == 0


def test_a_yielding_window_makes_room_for_the_evidence():
    kept = _session(options=BuildOptions(model="gpt-4o", recall_share=0.0))
    yields = _session(options=BuildOptions(model="gpt-4o", recall_share=0.8))

    def window(r):
        return sum(1 for x in r.report.items if x.included and x.reason == "window")

    for s in (kept, yields):  # three wide questions of the latest four already asked
        s.builder.window._asked = (None, (True, True, True))
        s.add_message_sync("user", _ask(0))
    a, b = kept.build_sync(max_tokens=2000), yields.build_sync(max_tokens=2000)
    assert _row(b.report, "f0").included
    assert window(b) < window(a)
    assert b.tokens <= 2000 and a.tokens <= 2000


def test_recall_share_is_validated():
    with pytest.raises(ConfigError, match="recall_share"):
        BuildOptions(recall_share=1.5)


@pytest.mark.parametrize("model", ["gpt-4o", "claude-sonnet-4-5"])
def test_build_for_the_question_just_added_shows_it_once(model):
    s = _session(model)
    question = _ask(9)
    s.add_message_sync("user", question)
    r = s.build_sync(question, max_tokens=1500)
    assert str(r.payload).count(question) == 1
    if model == "gpt-4o":
        assert r.payload["messages"][-1] == {"role": "user", "content": question}
        # A question that is not the last message is still a question build.
        q = s.build_sync("Where is the oak crate?", max_tokens=1500)
        assert q.payload["messages"][-1]["content"] == "Where is the oak crate?"
        assert _texts(q.payload).count(question) <= 1


def _recalls(monkeypatch) -> list[str]:
    """A list that gets "recall" each time recall of the session's own memory runs."""
    from loomctx.retrieval.source import UnifiedRetrievalSource

    searched: list[str] = []
    real = UnifiedRetrievalSource._adjacent  # once per recall, after its lists

    def spy(self, matches):
        searched.append("recall")
        return real(self, matches)

    monkeypatch.setattr(UnifiedRetrievalSource, "_adjacent", spy)
    return searched


def test_a_turn_that_shows_the_whole_session_skips_recall_of_it(monkeypatch):
    """Recall of the session's own messages finds only what the window shows when the whole
    history is in view: the turn skips it (the proxy's short conversations), and runs it again
    once the history outgrows half the budget."""
    searched = _recalls(monkeypatch)
    s = Session(embedder=HashingEmbedder(dim=256), clock=lambda: 1_700_000_000.0)
    for i, fact in enumerate(FACTS):  # ~500 tokens
        s.add_message_sync("user", fact, id=f"f{i}")
    s.add_message_sync("user", _ask(2))
    r = s.build_sync(max_tokens=4000)
    assert searched == []
    assert not [row for row in r.report.items if row.source == "L4_semantic"]
    assert FACTS[2] in _texts(r.payload)  # in view, as a message of the window
    r = s.build_sync(max_tokens=800)  # the history is now over half the budget: recall runs
    assert searched == ["recall"]
    assert any(row.source == "L4_semantic" for row in r.report.items)


@pytest.mark.parametrize(("role", "lines", "recalls"),
                         [("tool", 40, True), ("tool", 12, False), ("user", 40, False)])
def test_a_tool_output_the_window_cuts_leaves_recall_on(monkeypatch, role: str, lines: int,
                                                        recalls: bool):
    """A tool's output of a ninth of the budget is cut in the window (``tool_output_share``): the
    history is not all in view, so recall of it runs; one under its cut (12 lines, ~230 tokens)
    and a user's message as long are shown whole, and recall is skipped."""
    searched = _recalls(monkeypatch)
    s = Session(embedder=HashingEmbedder(dim=256), clock=lambda: 1_700_000_000.0)
    s.add_message_sync("user", "Pull the scan log of SHP-40233.")
    s.build_sync(max_tokens=6600)  # a turn at this budget: the window's room is known
    searched.clear()
    s.add_message_sync("assistant", None, tool_calls=[{
        "id": "c1", "type": "function", "function": {"name": "scan_log", "arguments": "{}"}}])
    log = "\n".join(f"2026-01-0{k % 9 + 1} HAM-03 SHP-40233 SCAN {k}" for k in range(lines))
    if role == "tool":
        s.add_message_sync("tool", log, tool_call_id="c1")
    else:
        s.add_message_sync("tool", "ok", tool_call_id="c1")
        s.add_message_sync("user", log)
    s.add_message_sync("assistant", "Here it is.")
    s.add_message_sync("user", "Which hub scanned it last?")
    r = s.build_sync(max_tokens=6600)  # the 40-line log (~760 tokens) is a ninth of it
    assert (searched == ["recall"]) is recalls
    cut = [row for row in r.report.items if row.reason == "truncated"]
    assert bool(cut) is recalls and r.tokens <= 6600


def test_a_question_build_that_points_back_takes_the_topic_of_the_turn_before():
    s = _session()
    s.add_message_sync("user", "Now, the oak crate.")
    r = s.build_sync("remind me, which dock and which gate did we put it behind last week?",
                     max_tokens=2000)
    # "it" is the oak crate: its fact is the best match although the question never names it
    rows = [x for x in r.report.items if x.source == "L4_semantic" and x.score is not None]
    assert max(rows, key=lambda x: x.score).id == "f13"
    assert "gate 113" in _texts(r.payload) and r.tokens <= 2000


def test_a_history_over_half_the_budget_that_the_window_still_shows_skips_recall(monkeypatch):
    """Once a turn at a budget has measured the window's room, a history that fits it is in
    view whole, however much of the budget it takes: recall of it is skipped too."""
    searched = _recalls(monkeypatch)
    s = Session(embedder=HashingEmbedder(dim=256), clock=lambda: 1_700_000_000.0)
    s.add_message_sync("user", "What did we decide about the Hamburg pickups?")
    s.build_sync(max_tokens=4000)  # the window's room at this budget is now known
    for i in range(40):  # ~2,400 tokens: over half the budget, within the window's room
        s.add_message_sync("user", f"Hamburg depot note {i}: " + "pallets moved to dock " * 10)
        s.add_message_sync("assistant", f"Noted {i}.")
    s.add_message_sync("user", "Which dock did the Hamburg pallets move to?")
    r = s.build_sync(max_tokens=4000)
    history = sum(row.tokens or 0 for row in r.report.items if row.source == "L1_recent")
    assert history > 2000 and r.tokens <= 4000
    assert all(row.included for row in r.report.items if row.source == "L1_recent")
    assert searched == []


def _example_turn(last: str, budget: int = 1500):
    """The bundled example conversation with its last user message said as ``last``, built as
    `loomctx build --example` builds it."""
    import argparse
    import json

    from loomctx.cli.build import example_dir

    path = example_dir() / "conversation.jsonl"
    lines = path.read_text().splitlines()
    message = json.loads(lines[-1])
    assert message["role"] == "user"
    message["content"] = last
    args = argparse.Namespace(
        example=True, history=None, system=None, tools=None, knowledge=None, query=None,
        model="gpt-4o", fallback_encoding=None, max_tokens=budget, window=None, reserve=None,
        format="openai", placement=None, text_style="plain", report="table", report_out=None,
        phase=None)
    return args, [*lines[:-1], json.dumps(message)]


@pytest.mark.parametrize("last", [
    "What is our refund policy for a shipment delayed by a customs hold, and what should I "
    "tell the Lyon customer about SHP-40233?",
    "Tell me our refund policy for a shipment delayed by a customs hold and what to tell the "
    "Lyon customer about SHP-40233.",
    "Morning! Busy day here. I need our refund policy for a shipment delayed by a customs hold "
    "and what to tell the Lyon customer about SHP-40233, thanks",
    # statements and a task that refer to the same documents, asking nothing
    "The Lyon customer about SHP-40233 wants our refund policy for a shipment delayed by a "
    "customs hold.",
    "Write the reply to the Lyon customer about SHP-40233 with our refund policy for the customs "
    "hold.",
])
def test_a_request_gets_the_evidence_the_question_gets(tmp_path, last):
    from loomctx.cli.build import builder_from_args

    args, lines = _example_turn(last)
    args.history = tmp_path / "conversation.jsonl"
    args.history.write_text("\n".join(lines) + "\n")
    builder, query, ctx = builder_from_args(args)
    r = builder.build_sync(query, max_tokens=1500, context=ctx)
    included = {x.id for x in r.report.items if x.included}
    assert {"refunds.md#0", "customs.md#0"} <= included
    assert r.tokens <= 1500


def test_a_fact_to_remember_reaches_every_later_turn():
    s = Session(embedder=HashingEmbedder(dim=1024), clock=lambda: 1_700_000_000.0,
                model="gpt-4o")
    s.add_message_sync("user", "Please remember: our warehouse gate code is 4471-B.")
    s.add_message_sync("assistant", "Noted, the gate code is 4471-B.")
    for i in range(150):  # 300 messages that never mention it again
        s.add_message_sync("user", f"Status of shipment SHP-{10000 + i} to Rotterdam, please.")
        s.add_message_sync("assistant", f"SHP-{10000 + i} is in transit, arriving day {i % 7}.")
    s.add_message_sync("user", "Next one: the Valencia pallets.")
    r = s.build_sync(max_tokens=2000)
    assert "4471-B" in _texts(r.payload) and r.tokens <= 2000
    row = next(x for x in r.report.items if x.source == "L2_important")
    assert row.included


def test_small_talk_spends_nothing_on_evidence():
    s = _session()
    s.add_message_sync("user", "Thanks, that's great, have a nice day!")
    r = s.build_sync(max_tokens=2000)
    assert not any(x.included for x in r.report.items if x.source == "L4_semantic")
