"""While tools are at work, the session's own past keeps to the volatile share of a turn.

Evidence that changes from step to step sits at the end of each request, so on a tool-using
agent all of it is re-sent on every model step; what is out of view of the session's own
messages gets the room a question's need would give only in a conversation without tools.
"""

from __future__ import annotations

import json

from loomctx import BuildOptions, HashingEmbedder, Session

BUDGET = 4000


def _session(with_tools: bool) -> Session:
    s = Session(embedder=HashingEmbedder(dim=512), clock=lambda: 1_700_000_000.0,
                model="gpt-4o", options=BuildOptions(model="gpt-4o"))
    for i in range(80):  # the distant past: what was said about the Hamburg depot
        s.add_message_sync("user", f"Hamburg depot note {i}: pickups of pallet batch {i} moved "
                                   f"to dock {i % 7} on Tuesday, contact Jana at extension {i}.")
        s.add_message_sync("assistant", f"Noted the Hamburg depot change {i}.")
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


def test_the_own_past_keeps_to_the_volatile_share_while_tools_are_at_work() -> None:
    working, talking = _evidence_tokens(_session(True)), _evidence_tokens(_session(False))
    share = BuildOptions().volatile_share * BUDGET
    assert 0 < working <= 1.5 * share  # stretched at most to the single best unit
    assert talking > 2 * share  # the same question in a conversation without tools
