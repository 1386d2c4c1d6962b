"""Labels of messages and passages, and a text without some terms' words."""

from __future__ import annotations

import pytest

from loomctx.text.labels import label_terms, without_terms


def test_label_terms_is_the_function_the_reranker_uses() -> None:
    from loomctx.retrieval import reranker

    assert reranker.label_terms is label_terms


@pytest.mark.parametrize(("text", "terms", "expected"), [
    ("What are Melanie's hobbies?", {"melanie"}, "What are hobbies?"),  # possessive goes too
    ("When did Caroline meet Melanie?", {"caroline", "melanie"}, "When did meet"),
    ("What did she paint?", {"melanie"}, "What did she paint?"),  # no word goes: unchanged
    ("Melanie?", {"melanie"}, "Melanie?"),  # every word would go: unchanged
    ("Where did Mel go?", set(), "Where did Mel go?"),
    ("Caroline  and\tthe  lake", {"caroline"}, "and the lake"),  # words by white space
    ("Which error did the build give?", {"error"}, "Which error did the build give?"),
    ("What did Error say?", {"error"}, "What did say?"),  # capitalised: a name
])
def test_without_terms(text: str, terms: set[str], expected: str) -> None:
    assert without_terms(text, frozenset(terms)) == expected
