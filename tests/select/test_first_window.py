"""A window placed for the first time costs no cache, so a wide question yields at once.

A session loaded with a long past (an agent resuming a conversation) has sent no request whose
prefix the window must keep: its first turn build may start the window wherever the question's
evidence needs, even when a few of retrieval's best matches are in view. Once a request was
sent, the same question yields only as the conversation turns to what is out of view. The room
a window gives up is the evidence's, all of it.
"""

from __future__ import annotations

from collections.abc import Callable

from loomctx import BuildOptions, Session

BUDGET = 16000
QUESTION = "What did we decide about the Hamburg depot pickups of the pallet batches?"


def _loaded(depot_past: Callable[[int], Session]) -> Session:
    s = depot_past(80)  # the distant past: what was said about the Hamburg depot
    for i in range(60):  # the recent window: other work, the depot named now and then
        depot = ": what we decided about the Hamburg depot pickups" if i % 30 == 0 else ""
        s.add_message_sync("user", f"Draft the Lyon newsletter section {i}{depot}.")
        s.add_message_sync("assistant", f"Section {i}: " + "spring catalogue colours " * 80)
    return s


def _evidence(s: Session) -> tuple[int, str]:
    r = s.build_sync(max_tokens=BUDGET)
    assert r.tokens <= BUDGET
    return (sum(it.tokens or 0 for it in r.report.items
                if it.included and it.kind == "evidence"), str(r.payload))


def test_the_first_window_yields_to_a_wide_question(depot_past: Callable[[int], Session]
                                                     ) -> None:
    share = BuildOptions().volatile_share * BUDGET
    s = _loaded(depot_past)
    s.add_message_sync("user", QUESTION)
    first, payload = _evidence(s)
    assert first > 3 * share  # the window started later: the evidence took its room
    assert _evidence(s) == (first, payload)  # a retry sends the same request

    warm = _loaded(depot_past)
    warm.add_message_sync("user", "Draft the Lyon newsletter closing.")
    _evidence(warm)  # a request was sent: its prefix is what the next one reuses
    warm.add_message_sync("assistant", "Closing: " + "see you in spring " * 20)
    warm.add_message_sync("user", QUESTION)
    assert _evidence(warm)[0] <= 1.5 * share  # one wide question does not move the window


def test_the_evidence_of_a_window_that_yielded_takes_all_the_room_left(
        depot_past: Callable[[int], Session]) -> None:
    s = _loaded(depot_past)
    s.add_message_sync("user", QUESTION)
    r = s.build_sync(max_tokens=BUDGET)
    left_out = [it for it in r.report.items
                if it.kind == "evidence" and not it.included and it.reason == "budget"]
    assert left_out  # more evidence than room ...
    # ... and the room the window gave up is spent on it, not kept back by need a second time
    assert BUDGET - r.tokens < BuildOptions().volatile_share * BUDGET


def test_a_long_text_that_is_not_the_best_match_does_not_take_the_room_of_many(
        depot_past: Callable[[int], Session]) -> None:
    s = depot_past(80)
    s.add_message_sync("user", "Pasting the yard handbook for reference: " + " ".join(
        f"Section {i}: forklift tyre pressure and battery charging rule {i} at the Bremen yard."
        + (" The Hamburg depot pickups of pallet batches follow it too." if i % 10 == 0 else "")
        for i in range(420)))  # ~8,000 tokens that mention the depot now and then
    s.add_message_sync("assistant", "Noted the handbook.")
    for i in range(60):
        depot = ": what we decided about the Hamburg depot pickups" if i % 30 == 0 else ""
        s.add_message_sync("user", f"Draft the Lyon newsletter section {i}{depot}.")
        s.add_message_sync("assistant", f"Section {i}: " + "spring catalogue colours " * 80)
    s.add_message_sync("user", QUESTION)
    r = s.build_sync(max_tokens=BUDGET)
    evidence = [it for it in r.report.items if it.kind == "evidence"]
    handbook = next(it for it in evidence if (it.tokens or 0) > BUDGET // 3)
    best = max(evidence, key=lambda it: it.score or 0.0)
    assert handbook is not best and not handbook.included and handbook.reason == "budget"
    # its room went to the depot notes that match better
    assert BUDGET - r.tokens < BuildOptions().volatile_share * BUDGET
