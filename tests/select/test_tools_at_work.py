"""While tools are at work, the session's own past keeps to the volatile share of a turn.

Evidence that changes from step to step sits at the end of each request, so on a tool-using
agent all of it is re-sent on every model step; what is out of view of the session's own
messages gets the room a question's need would give only in a conversation without tools.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from loomctx import BuildOptions, Session

BUDGET = 4000


def _session(depot_past: Callable[[int], Session], with_tools: bool) -> Session:
    s = depot_past(80)  # the distant past: what was said about the Hamburg depot
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
        depot_past: Callable[[int], Session]) -> None:
    working = _evidence_tokens(_session(depot_past, True))
    talking = _evidence_tokens(_session(depot_past, False))
    share = BuildOptions().volatile_share * BUDGET
    assert 0 < working <= 1.5 * share  # stretched at most to the single best unit
    assert talking > 2 * share  # the same question in a conversation without tools
