"""A window that yields to a question's evidence keeps its newest unit, and no more.

When the room left after the evidence's reserve cannot hold even the newest exchange (a long
answer just before the question), the window shows that exchange and the evidence takes the
rest; the reserve is not dropped for the whole window.
"""

from __future__ import annotations

from collections.abc import Callable

from loomctx import BuildOptions, Session

BUDGET = 4000


def _session(depot_past: Callable[[int], Session], reply_words: int) -> Session:
    s = depot_past(60)  # the distant past: what was said about the Hamburg depot
    for i in range(6):  # the recent window: long answers about something else
        s.add_message_sync("user", f"Draft the Lyon newsletter section {i}.")
        s.add_message_sync("assistant", f"Section {i}: " + "spring catalogue colours " *
                           reply_words)
    s.add_message_sync("user", "What did we decide about the Hamburg depot pickups and docks?")
    return s


def _build(depot_past: Callable[[int], Session], reply_words: int) -> tuple[int, int]:
    """(evidence tokens, window messages shown) of the question's turn build."""
    r = _session(depot_past, reply_words).build_sync(max_tokens=BUDGET)
    assert r.tokens <= BUDGET
    evidence = sum(it.tokens or 0 for it in r.report.items
                   if it.included and it.kind == "evidence")
    shown = sum(1 for it in r.report.items if it.included and it.source == "L1_recent")
    return evidence, shown


def test_a_yielding_window_keeps_its_newest_exchange_and_gives_the_rest(
        depot_past: Callable[[int], Session]) -> None:
    short_evidence, _ = _build(depot_past, 40)
    long_evidence, shown = _build(depot_past, 200)  # an answer of ~1,000 tokens: over what is left
    share = BuildOptions().volatile_share * BUDGET
    assert short_evidence > 4 * share  # the question's own past, out of view: the window yields
    assert long_evidence > 2 * share  # ... and still does when its newest answer is long
    assert 1 <= shown <= 2  # the newest exchange, not the whole window
