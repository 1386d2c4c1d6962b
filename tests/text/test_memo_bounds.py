"""What scoring remembers of the texts it saw is bounded by their size, not by their count: a
service scores new long messages (pasted logs) for as long as it runs, and a memo of 32,768
whole texts grew it by their every byte."""

from __future__ import annotations

import sys

from loomctx.text.lexical import term_set
from loomctx.text.stem import stem

BOUND = 32 * 1024 * 1024
"""What term_set's memo may hold (``loomctx.text.lexical.BOUND``)."""


def _retained(texts: list[str]) -> int:
    """Characters of ``texts`` something besides the list still holds (a text held by the
    list alone counts as many references as a control text held the same way)."""
    control = ["".join(["control ", "text"])]
    alone = next(sys.getrefcount(t) for t in control)
    return sum(len(t) for t in texts if sys.getrefcount(t) > alone)


def test_term_sets_of_many_long_texts_keep_at_most_the_memo_bound() -> None:
    texts = [("alpha beta " * 50_000) + f"t{i}" for i in range(100)]  # 550 KB each
    for i, text in enumerate(texts):
        assert term_set(text) == {"alpha", "beta", f"t{i}"}
    del text
    assert _retained(texts) <= BOUND
    assert sum(len(t) for t in texts) > 1.5 * BOUND  # the old memo kept all of them


def test_a_text_heavier_than_an_eighth_of_the_bound_is_not_kept() -> None:
    from loomctx.text.lexical import TERM_MEMO_BYTES
    from loomctx.text.memo import WeightMemo

    assert TERM_MEMO_BYTES == BOUND
    memo = WeightMemo(len, lambda key, value: len(key), limit=8_000)
    small, large = "x" * 900, "y" * 1_200
    assert memo(small) == 900 and memo(large) == 1_200
    assert len(memo) == 1 and memo.weight == 900
    for i in range(20):  # least recently used first out, within the limit
        memo(f"{i:03d}" + "z" * 800)
    assert memo.weight <= 8_000 and len(memo) == 9


def test_a_long_word_is_stemmed_but_not_memoised() -> None:
    word = "b" * 100_000 + "s"
    base = sys.getrefcount(word)
    assert stem(word) == "b" * 100_000
    assert sys.getrefcount(word) == base
