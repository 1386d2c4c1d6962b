"""A window that yields to a question's evidence keeps its newest unit, and no more.

When the room left after the evidence's reserve cannot hold even the newest exchange (a long
answer just before the question), the window shows that exchange and the evidence takes the
rest; the reserve is not dropped for the whole window.
"""

from __future__ import annotations

from loomctx import BuildOptions, HashingEmbedder, Session

BUDGET = 4000


def _session(reply_words: int) -> Session:
    s = Session(embedder=HashingEmbedder(dim=512), clock=lambda: 1_700_000_000.0,
                model="gpt-4o", options=BuildOptions(model="gpt-4o"))
    for i in range(60):  # the distant past: what was said about the Hamburg depot
        s.add_message_sync("user", f"Hamburg depot note {i}: pickups of pallet batch {i} moved "
                                   f"to dock {i % 7} on Tuesday, contact Jana at extension {i}.")
        s.add_message_sync("assistant", f"Noted the Hamburg depot change {i}.")
    for i in range(6):  # the recent window: long answers about something else
        s.add_message_sync("user", f"Draft the Lyon newsletter section {i}.")
        s.add_message_sync("assistant", f"Section {i}: " + "spring catalogue colours " *
                           reply_words)
    s.add_message_sync("user", "What did we decide about the Hamburg depot pickups and docks?")
    return s


def _build(reply_words: int) -> tuple[int, int]:
    """(evidence tokens, window messages shown) of the question's turn build."""
    r = _session(reply_words).build_sync(max_tokens=BUDGET)
    assert r.tokens <= BUDGET
    evidence = sum(it.tokens or 0 for it in r.report.items
                   if it.included and it.kind == "evidence")
    shown = sum(1 for it in r.report.items if it.included and it.source == "L1_recent")
    return evidence, shown


def test_a_yielding_window_keeps_its_newest_exchange_and_gives_the_rest() -> None:
    short_evidence, _ = _build(40)
    long_evidence, shown = _build(200)  # one answer is ~1,000 tokens: more than what is left
    share = BuildOptions().volatile_share * BUDGET
    assert short_evidence > 4 * share  # the question's own past, out of view: the window yields
    assert long_evidence > 2 * share  # ... and still does when its newest answer is long
    assert 1 <= shown <= 2  # the newest exchange, not the whole window
