"""A turn whose message refers to nothing said before gets nothing of the session's own past.

"Compute (716.5 * 40) / 5 for me" after a hundred earlier computations finds them all by their
words, yet needs none of them: shown, they cost the turn's room and, at the request's end, the
prompt cache on every step. A statement that names something or points back ("Send it to the
address I gave you", "the same hotel as last time") still gets its evidence, and what the user
asked to keep still competes in every turn.
"""

from __future__ import annotations

import pytest

from loomctx import BuildOptions, Document, HashingEmbedder, KnowledgeSource, Session

BUDGET = 2000


def _session(tasks: int = 60, knowledge: tuple[KnowledgeSource, ...] = ()) -> Session:
    s = Session(embedder=HashingEmbedder(dim=512), clock=lambda: 1_700_000_000.0,
                model="gpt-4o", options=BuildOptions(model="gpt-4o"), knowledge=knowledge)
    s.add_message_sync("user", "Please remember: ship everything to 14 Quai Perrache, Lyon.")
    s.add_message_sync("assistant", "Noted: 14 Quai Perrache, Lyon.")
    s.add_message_sync("user", "We booked the Hotel Aurora in Porto for the March trip.")
    s.add_message_sync("assistant", "Hotel Aurora in Porto, noted.")
    for i in range(tasks):  # self-contained tasks, long enough to push the start out of view
        s.add_message_sync("user", f"Compute ({100 + i}.5 * {i % 9 + 2}) / {i % 5 + 2} for me")
        s.add_message_sync("assistant", f"The result is {i * 7.25:.2f}. " + "Worked. " * 30)
    return s


def _own_evidence(s: Session, message: str) -> tuple[list[str], list[str], str]:
    """The session's own memories a turn for ``message`` includes, those it reports as
    unreferred, and the request's text."""
    s.add_message_sync("user", message)
    r = s.build_sync(max_tokens=BUDGET)
    assert r.tokens <= BUDGET
    shown = [it.id for it in r.report.items if it.included and it.kind == "evidence"]
    left = [it.id for it in r.report.items if it.reason == "unreferred"]
    return shown, left, str(r.payload["messages"])


def test_a_message_that_refers_to_nothing_gets_none_of_the_own_past() -> None:
    s = _session()
    shown, _, text = _own_evidence(s, "Compute (716.5 * 40) / 5 for me")
    assert "Hotel Aurora" not in text  # nothing of the past but what the user asked to keep
    assert "Compute (100.5" not in text  # an earlier task, out of view
    assert "14 Quai Perrache" in text  # asked to be kept: competes in every turn
    assert len(shown) == 1


@pytest.mark.parametrize("message", [
    "Book the same hotel as last time for the May trip",
    "Rebook the Porto hotel for May",
    "Send the May invoice to the hotel I mentioned",
])
def test_a_statement_that_names_or_points_back_gets_its_evidence(message: str) -> None:
    _, left, text = _own_evidence(_session(), message)
    assert "Hotel Aurora" in text
    assert left == []


def test_knowledge_still_counts_for_a_message_that_refers_to_nothing() -> None:
    kb = KnowledgeSource([Document("calc.md", "Compute results: rounded to two decimals.")])
    s = _session(knowledge=(kb,))
    _, left, text = _own_evidence(s, "Compute (716.5 * 40) / 5 for me")
    assert "rounded to two decimals" in text
    assert left  # the earlier computations were found (with the knowledge) and left out
    assert "Compute (100.5" not in text
