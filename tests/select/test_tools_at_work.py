"""While tools are at work, the session's own past keeps to ``tool_share`` of a turn.

Evidence that changes from step to step sits at the end of each request, so on a tool-using
agent all of it is re-sent on every model step; what is out of view of the session's own
messages gets the room a question's need would give only in a conversation without tools.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from loomctx import BuildOptions, ConfigError, Session

BUDGET = 4000


def _session(depot_past: Callable[..., Session], with_tools: bool, **options: float,
             ) -> Session:
    s = depot_past(80, **options)  # the distant past: what was said about the Hamburg depot
    for i in range(12):  # the recent window: the agent at work (or only talking)
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


@pytest.mark.parametrize("name", ["low_water", "volatile_share", "tool_share", "summary_share",
                                  "recall_share"])
@pytest.mark.parametrize("value", [-0.01, 1.0, 1.5, "0.1", None, False, float("nan")])
def test_a_share_outside_zero_to_one_is_refused_by_name(name: str, value: object) -> None:
    with pytest.raises(ConfigError, match=name):
        BuildOptions(**{name: value})
