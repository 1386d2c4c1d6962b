"""Development / held-out splits, turns presented with their metadata, and the fusion baseline."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from loomctx.errors import ConfigError
from loomctx.eval.baselines import BM25Baseline, FusionBaseline
from loomctx.eval.records import EvalQuestion, Turn
from loomctx.eval.runner import evaluate
from loomctx.eval.splits import (
    DEV_CONVERSATIONS,
    DEV_QUESTIONS,
    SPLIT_KEY,
    decorate,
    with_metadata,
    with_splits,
)


def _conversations(n: int, per: int = 3) -> list[EvalQuestion]:
    """``n`` conversations of two turns, ``per`` questions each (sharing their history)."""
    out = []
    for c in range(n):
        history = (
            Turn(id="D1:1", role="user", content=f"Ann: talk {c}", timestamp=1_683_554_160.0),
            Turn(id="D1:2", role="assistant", content=f"Bob: reply {c}", timestamp=None),
        )
        out += [EvalQuestion(id=f"c{c}/{i}", question="?", history=history, gold=("D1:1",))
                for i in range(per)]
    return out


def test_locomo_splits_by_conversation() -> None:
    questions = _conversations(DEV_CONVERSATIONS + 2)
    dev = list(with_splits(questions, "locomo", "dev"))
    test = list(with_splits(questions, "locomo", "test"))
    assert [q.id.split("/")[0] for q in dev[::3]] == [f"c{c}" for c in range(DEV_CONVERSATIONS)]
    held = {f"c{DEV_CONVERSATIONS}", f"c{DEV_CONVERSATIONS + 1}"}
    assert {q.id.split("/")[0] for q in test} == held
    both = list(with_splits(questions, "locomo", "all"))
    assert [q.extras[SPLIT_KEY] for q in both] == [q.extras[SPLIT_KEY] for q in dev + test]
    assert all(q.history is questions[i].history for i, q in enumerate(both))


@pytest.mark.parametrize("dataset", ["hotpotqa", "generic"])
def test_other_data_splits_by_position(dataset: str) -> None:
    questions = _conversations(DEV_QUESTIONS + 5, per=1)
    assert len(list(with_splits(questions, dataset, "dev"))) == DEV_QUESTIONS
    assert [q.id for q in with_splits(questions, dataset, "test")] == [
        f"c{i}/0" for i in range(DEV_QUESTIONS, DEV_QUESTIONS + 5)]


def test_unknown_split_is_refused() -> None:
    with pytest.raises(ConfigError, match="'train'"):
        list(with_splits([], "locomo", "train"))


def test_runner_reports_each_split_apart() -> None:
    questions = list(with_splits(_conversations(DEV_CONVERSATIONS + 1, per=2), "locomo"))
    report = evaluate(questions, [BM25Baseline()], [64], split="all")
    assert report.categories == ("all", "split:dev", "split:test")
    assert report.get("bm25", 64, "split:dev").n == 2 * DEV_CONVERSATIONS
    assert report.get("bm25", 64, "split:test").n == 2
    assert report.to_dict()["split"] == "all"
    assert "split all" in report.table()


def test_metadata_decoration_keeps_shared_histories() -> None:
    questions = _conversations(2)
    decorated = list(with_metadata(questions))
    first = decorated[0].history
    assert first[0].content == "[D1:1] (2023-05-08 13:56) Ann: talk 0"
    assert first[1].content == "[D1:2] (unknown time) Bob: reply 0"
    assert decorated[1].history is first and decorated[3].history is not first
    assert decorate(first[0]).id == "D1:1"


class _Topic:
    """A fake embedder: one dimension per topic word, so 'dense' finds synonyms BM25 cannot."""

    name = "topic-test"
    dim = 2
    _WORDS = (("dog", "puppy", "greyhound"), ("paint", "canvas"))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = [[float(any(w in t.lower() for w in words)) for words in self._WORDS]
                for t in texts]
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dim)


def test_fusion_prefers_what_both_rankings_agree_on() -> None:
    history = (
        Turn(id="lex", role="user", content="Ann: my dog tag order shipped"),  # both
        Turn(id="syn", role="user", content="Bob: the puppy sleeps all day"),  # dense only
        Turn(id="word", role="user", content="Ann: the order shipped today"),  # lexical only
        Turn(id="off", role="user", content="Bob: I bought a new canvas"),
    )
    q = EvalQuestion(id="q", question="when did the dog order ship?", history=history,
                     gold=("lex",))
    fusion = FusionBaseline(_Topic())
    one_line = fusion.run(q, 12)
    assert one_line.included_ids == ("lex",)
    scores = fusion._scores(fusion._built.get(history, fusion._build), q.question)
    assert scores[0] == scores.max() and scores[3] == scores.min()
