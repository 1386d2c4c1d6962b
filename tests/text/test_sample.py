"""What one long text costs its analysis is bounded: every pass that reads a message for terms
or a vector reads at most a sample of ``ANALYSIS_CHARS`` characters (its head and tail)."""

from __future__ import annotations

from loomctx.memory.importance import HeuristicImportance
from loomctx.stores import _text as store_text
from loomctx.text.decoration import index_text
from loomctx.text.lexical import BM25Index, content_terms, term_set, tokenize
from loomctx.text.sample import ANALYSIS_CHARS, HEAD_CHARS, sample

HUGE = "".join(f"w{n} " for n in range(400_000))  # ~3 MB of all-distinct words


def test_a_text_up_to_the_bound_is_read_whole() -> None:
    text = "x" * ANALYSIS_CHARS
    assert sample(text) is text
    assert index_text("[m1] " + "y" * 40_000) == "y" * 40_000  # the longest eval message: 37k


def test_a_longer_text_is_read_as_its_head_and_tail() -> None:
    got = sample(HUGE)
    assert ANALYSIS_CHARS - 128 <= len(got) <= ANALYSIS_CHARS
    head, tail = got.split("\n")
    assert HUGE.startswith(head) and len(head) >= HEAD_CHARS - 64
    assert HUGE.endswith(tail)
    words = set(HUGE.split())  # each cut falls at a space: no word is read in half
    assert set(head.split()) <= words and set(tail.split()) <= words
    assert sample(HUGE) == got  # deterministic


def test_the_terms_of_a_huge_text_are_bounded() -> None:
    bound = ANALYSIS_CHARS // 2  # a term takes at least a character and a separator
    assert len(tokenize(HUGE)) <= bound
    assert len(term_set(HUGE)) <= bound
    assert len(index_text(HUGE)) <= ANALYSIS_CHARS
    assert len(store_text.tokenize(HUGE)) <= bound
    assert len(store_text.query_tokens(HUGE)) <= bound
    index = BM25Index()
    index.add([HUGE])
    assert len(index.scores("w399999")) == 1
    assert index.search("w399999", 1)  # the tail is indexed
    assert not index.search("w200000", 1)  # the middle is not
    assert content_terms(HUGE + " zebra zebra zebra", 1) == ["zebra"]


def test_importance_reads_the_sample() -> None:
    middle = "a" * 100_000 + " remember this " + "b" * 100_000
    assert HeuristicImportance().score(middle) == HeuristicImportance().score("c" * 200_000)


def test_the_term_memo_keeps_no_huge_text_alive() -> None:
    import gc
    import weakref

    class Text(str):
        """A str that can be weakly referenced: alive only while something keeps it."""

    huge = Text("v" * 20_000 + " zebra")
    alive = weakref.ref(huge)
    assert "zebra" in term_set(huge)
    del huge
    gc.collect()
    assert alive() is None
