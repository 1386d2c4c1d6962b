"""QueryRewriter: a follow-up question gains the top-K content terms of the last N turns."""

from __future__ import annotations

import pytest

from loomctx.errors import ConfigError
from loomctx.retrieval.rewriter import QueryRewriter

FOLLOW_UP = "and what about the second one?"
RECENT = [
    "The pasta recipe needs basil.",  # oldest: outside last_n=3
    "The shipment to Lyon is on customs hold, customs said",
    "我们的货物在里昂海关被扣留了",
    "ok, the courier will call",
]


def appended(query: str, rewritten: str) -> list[str]:
    assert rewritten.startswith(query)
    return rewritten[len(query):].split()


def test_top_terms_of_the_recent_turns_are_appended_most_frequent_first() -> None:
    out = QueryRewriter(last_n=3, top_k=6).rewrite(FOLLOW_UP, RECENT)
    # "customs" (twice, stemmed) first, then ties in order of first appearance.
    assert appended(FOLLOW_UP, out) == ["custom", "shipment", "lyon", "hold", "said", "货物"]


def test_english_and_chinese_stopwords_are_dropped() -> None:
    out = QueryRewriter(last_n=5, top_k=20).rewrite("q", RECENT[1:3])
    terms = appended("q", out)
    assert terms == ["custom", "shipment", "lyon", "hold", "said",
                     "货物", "里昂", "海关", "扣留"]
    for stop in ("the", "to", "is", "on", "我们", "的", "在", "被", "了"):
        assert stop not in terms


def test_top_k_caps_the_terms() -> None:
    for k in (1, 2, 4):
        out = QueryRewriter(last_n=3, top_k=k).rewrite(FOLLOW_UP, RECENT)
        assert appended(FOLLOW_UP, out) == ["custom", "shipment", "lyon", "hold"][:k]


def test_only_the_last_n_turns_are_read() -> None:
    assert appended("q", QueryRewriter(last_n=1, top_k=6).rewrite("q", RECENT)) == [
        "courier", "call"]  # "ok" and "will" are stopwords
    wide = appended("q", QueryRewriter(last_n=4, top_k=50).rewrite("q", RECENT))
    narrow = appended("q", QueryRewriter(last_n=3, top_k=50).rewrite("q", RECENT))
    assert "basil" in wide and "pasta" in wide
    assert "basil" not in narrow and "pasta" not in narrow


def test_terms_already_in_the_query_are_not_repeated_and_k_still_filled() -> None:
    query = "Is the Lyon shipment moving?"
    terms = appended(query, QueryRewriter(last_n=3, top_k=3).rewrite(query, RECENT))
    assert terms == ["custom", "hold", "said"]


def test_nothing_to_add_leaves_the_query_unchanged() -> None:
    assert QueryRewriter().rewrite(FOLLOW_UP, []) == FOLLOW_UP
    assert QueryRewriter(top_k=0).rewrite(FOLLOW_UP, RECENT) == FOLLOW_UP
    assert QueryRewriter(last_n=0).rewrite(FOLLOW_UP, RECENT) == FOLLOW_UP
    assert QueryRewriter().rewrite(FOLLOW_UP, ["the of and", "是的"]) == FOLLOW_UP
    assert QueryRewriter(top_k=2).rewrite("", ["Lyon customs"]) == "lyon custom"


def test_defaults_are_the_seed_values_and_options_are_validated() -> None:
    r = QueryRewriter()
    assert (r.last_n, r.top_k) == (5, 6)
    with pytest.raises(ConfigError, match="-1"):
        QueryRewriter(last_n=-1)
    with pytest.raises(ConfigError, match="-2"):
        QueryRewriter(top_k=-2)
