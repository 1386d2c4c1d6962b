"""While tools are at work, the session's own past keeps to ``tool_share`` of a turn, scaled
by the share of retrieval's best matches out of view.

Evidence that changes from step to step sits at the end of each request, so on a tool-using
agent it would be re-sent on every model step: evidence that holds all of what is out of view
is kept in place as a recall note instead (the next steps find it shown and add none), and a
step whose best matches are all in view gets none. What is out of view of the session's own
messages gets the room a question's need would give only in a conversation without tools.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from loomctx import BuildOptions, BuildResult, ConfigError, Session

BUDGET = 4000


def _parcels(s: Session, turns: int, with_tools: bool = True) -> None:
    """``turns`` turns about Lyon parcels: the agent at work (or only talking)."""
    for i in range(turns):
        s.add_message_sync("user", f"Check parcel P-{1000 + i} in Lyon.")
        if with_tools:
            s.add_message_sync("assistant", None, tool_calls=[{
                "id": f"c{i}", "type": "function",
                "function": {"name": "track", "arguments": json.dumps({"id": f"P-{1000 + i}"})}}])
            s.add_message_sync("tool", f"P-{1000 + i}: Lyon sorting centre, " + "scan ok " * 120,
                               tool_call_id=f"c{i}")
            s.add_message_sync("assistant", f"P-{1000 + i} is at the Lyon sorting centre.")
        else:  # the same words, said
            s.add_message_sync("assistant", f"P-{1000 + i}: Lyon sorting centre, "
                                            + "scan ok " * 120)


def _session(depot_past: Callable[..., Session], with_tools: bool, **options: float,
             ) -> Session:
    s = depot_past(80, **options)  # the distant past: what was said about the Hamburg depot
    _parcels(s, 12, with_tools)  # the recent window
    s.add_message_sync("user", "What did we decide about the Hamburg depot pickups and docks?")
    return s


def _evidence_tokens(s: Session) -> int:
    r = s.build_sync(max_tokens=BUDGET)
    assert r.tokens <= BUDGET
    return sum(it.tokens or 0 for it in r.report.items if it.included and it.kind == "evidence")


def test_the_own_past_keeps_to_the_volatile_share_while_tools_are_at_work(
        depot_past: Callable[..., Session]) -> None:
    working = _evidence_tokens(_session(depot_past, True))
    talking = _evidence_tokens(_session(depot_past, False))
    share = BuildOptions().tool_share * BUDGET
    assert 0 < working <= 1.5 * share  # stretched at most to the single best unit
    assert talking > 2 * BuildOptions().volatile_share * BUDGET  # the same, without tools


def test_tool_share_sets_the_own_past_room_while_tools_are_at_work(
        depot_past: Callable[..., Session]) -> None:
    wider = _evidence_tokens(_session(depot_past, True,
                                      tool_share=BuildOptions().volatile_share))
    assert wider > 1.5 * BuildOptions().tool_share * BUDGET


@pytest.mark.parametrize("name", ["low_water", "volatile_share", "tool_share",
                                  "tool_output_share", "summary_share", "recall_share"])
@pytest.mark.parametrize("value", [-0.01, 1.0, 1.5, "0.1", None, False, float("nan")])
def test_a_share_outside_zero_to_one_is_refused_by_name(name: str, value: object) -> None:
    with pytest.raises(ConfigError, match=name):
        BuildOptions(**{name: value})


def _working(depot_past: Callable[..., Session], notes: int, turns: int, question: str,
             ) -> Session:
    """``notes`` depot notes, then ``turns`` tool-using turns, then ``question``."""
    s = depot_past(notes)
    _parcels(s, turns)
    s.add_message_sync("user", question)
    return s


def _tool_step(s: Session) -> None:
    """The agent calls a tool for the turn and gets its result."""
    s.add_message_sync("assistant", None, tool_calls=[{
        "id": "step", "type": "function", "function": {"name": "track", "arguments": "{}"}}])
    s.add_message_sync("tool", "P-2000: Lyon sorting centre, scan ok.", tool_call_id="step")


def _new_evidence(r: BuildResult) -> list[str]:
    """The evidence this build adds (not what a recall note already shows)."""
    return [it.id for it in r.report.items
            if it.included and it.kind == "evidence" and it.reason != "recalled"]


def test_evidence_that_holds_all_out_of_view_stays_in_place_through_the_tool_steps(
        depot_past: Callable[..., Session]) -> None:
    s = _working(depot_past, 4, 24, "What did we decide about the Hamburg depot pickups?")
    first = s.build_sync(max_tokens=8000)
    shown = _new_evidence(first)
    assert shown  # the depot notes are out of view: the turn gets them
    _tool_step(s)
    second = s.build_sync(max_tokens=8000)
    before = first.payload["messages"]
    assert second.payload["messages"][:len(before)] == before  # the whole request, cached
    assert _new_evidence(second) == []
    recalled = {it.id for it in second.report.items if it.reason == "recalled"}
    assert set(shown) <= recalled


def test_evidence_cut_short_by_the_room_stays_at_the_request_end(
        depot_past: Callable[..., Session]) -> None:
    s = _working(depot_past, 80, 24, "What did we decide about the Hamburg depot pickups?")
    first = s.build_sync(max_tokens=8000)
    assert first.tokens <= 8000 and _new_evidence(first)
    _tool_step(s)
    second = s.build_sync(max_tokens=8000)
    # not kept: the next step shows more of what is out of view, not the same block again
    assert not any(it.reason == "recalled" for it in second.report.items)
    assert _new_evidence(second)
    assert second.payload["messages"][-1]["content"].startswith("Context for this turn")


def test_a_step_whose_best_matches_are_in_view_gets_no_evidence_while_tools_are_at_work(
        depot_past: Callable[..., Session]) -> None:
    s = _working(depot_past, 80, 4, "Where is parcel P-1003 now?")
    first = s.build_sync(max_tokens=BUDGET)
    assert _new_evidence(first) == []  # the depot's past is out of view, and not asked for
    _tool_step(s)
    second = s.build_sync(max_tokens=BUDGET)
    assert _new_evidence(second) == []
    before = first.payload["messages"]
    assert second.payload["messages"][:len(before)] == before


def test_while_tools_are_at_work_the_sessions_own_tool_outputs_are_no_evidence(
        depot_past: Callable[..., Session]) -> None:
    """The agent calls a tool again for its output; what was said takes the evidence's room."""
    s = _working(depot_past, 4, 24, "Where did parcel P-1001 get scanned, and what did we "
                                    "decide about the Hamburg depot pickups?")
    r = s.build_sync(max_tokens=8000)
    callable_ = [row for row in r.report.items if row.reason == "callable"]
    assert callable_ and not any(row.included for row in callable_)
    evidence = " ".join(m["content"] for m in r.payload["messages"] if m["role"] == "system"
                        and m["content"].startswith("Context for this turn"))
    assert "Hamburg depot note" in evidence  # what was said still comes
    assert "scan ok" not in evidence  # the parcel's old tracking output, out of view, does not


@pytest.mark.parametrize(("cost", "stretched"), [(700, True), (800, False)])
def test_the_best_unit_still_stretches_the_room_to_three_times_the_unscaled_share(
        cost: int, stretched: bool) -> None:
    """While tools are at work the room is the share times the need, but the single best unit
    may still take up to three times the share itself (a long message holding a planted fact
    was lost when only three times the scaled room counted)."""
    from types import SimpleNamespace

    from loomctx.items import ContextItem, Tier
    from loomctx.select.packer import Unit
    from loomctx.select.window import TurnWindow

    tool = ContextItem(id="t", source="h", content="scan ok", kind="message", role="tool")
    fact = ContextItem(id="f", source="L4", content="fact", kind="evidence", role="user")
    st = SimpleNamespace(window_start={"h": 0}, candidates={"h": [tool], "L4": [fact]},
                         available=8000, recall_need=0.25, recall_beyond=0.0, asks=True,
                         recall_reserve=0)
    window = TurnWindow(BuildOptions(), None, len, len)  # type: ignore[arg-type]
    unit = Unit(items=[fact], source="L4", cost=cost, score=1.0, tier=Tier.P2)
    _, cap = window.pool(st, st.candidates, {"L4": [unit]})  # type: ignore[arg-type]
    share = BuildOptions().tool_share * 8000  # 240: the scaled room is 60
    assert cap == (cost if stretched else int(share * 0.25))
    assert (cost <= 3 * share) is stretched
