"""Evidence recall and the budget check."""

from __future__ import annotations

import pytest

from loomctx.errors import ConfigError
from loomctx.eval.metric import count_tokens, recall, score_build, within_budget


def test_recall_counts_whole_texts_only() -> None:
    context = "Ann: I live in Oslo\nBob: Noted"
    assert recall(context, ["Ann: I live in Oslo", "Bob: Noted"]) == 1.0
    assert recall(context, ["Ann: I live in Oslo", "Bob: Noted and more"]) == 0.5
    assert recall(context, ["Ann: I live in Oslo, Norway"]) == 0.0
    with pytest.raises(ConfigError):
        recall(context, [])


def test_count_and_budget_use_cl100k() -> None:
    assert count_tokens("hello world") == 2
    assert count_tokens("<|endoftext|>") > 1  # special strings are plain text
    assert within_budget("hello world", 2)
    assert not within_budget("hello world", 1)


def test_score_build_needs_id_and_text() -> None:
    gold = [("a", "Ann: thanks"), ("b", "Bob: I moved to Oslo")]
    context = "Ann: thanks a lot\nBob: I moved to Oslo"
    # "Ann: thanks" occurs only inside another turn that was included under the id "c".
    score = score_build(context, ["c", "b"], gold, budget=100)
    assert score.recall == 0.5 and not score.over_budget
    assert score.tokens == count_tokens(context)
    # An id reported as included but whose text was truncated does not count.
    assert score_build("Bob: I moved", ["b"], gold, budget=100).recall == 0.0


def test_score_build_over_budget_scores_zero() -> None:
    gold = [("a", "Ann: hello there")]
    score = score_build("Ann: hello there", ["a"], gold, budget=2)
    assert score.over_budget and score.recall == 0.0 and score.tokens > 2
