"""Aggregation of recall, over-budget counts and latency per system, budget and category."""

from __future__ import annotations

import json

import pytest

from loomctx.errors import ConfigError
from loomctx.eval.baselines import EvalOutput, RecencyBaseline
from loomctx.eval.metric import count_tokens
from loomctx.eval.records import EvalQuestion, Turn
from loomctx.eval.runner import evaluate

HISTORY = tuple(Turn(id=f"t{i}", role="user", content=f"fact number {i}") for i in range(6))


class FirstGoldWhenSmall:
    """Includes every gold turn at budgets >= 100, only the first one below (an oracle)."""

    name = "oracle"

    def run(self, q: EvalQuestion, budget: int) -> EvalOutput:
        ids = q.gold if budget >= 100 else q.gold[:1]
        text = "\n".join(t.content for t in q.history if t.id in ids)
        return EvalOutput(context=text, tokens=count_tokens(text), included_ids=tuple(ids))


class Overflowing:
    """Returns the whole history whatever the budget."""

    name = "overflow"

    def run(self, q: EvalQuestion, budget: int) -> EvalOutput:
        text = "\n".join(t.content for t in q.history)
        return EvalOutput(context=text, tokens=0, included_ids=tuple(t.id for t in q.history))


QUESTIONS = [
    EvalQuestion(id="q1", question="?", history=HISTORY, gold=("t0", "t1"), category="a"),
    EvalQuestion(id="q2", question="?", history=HISTORY, gold=("t2",), category="a"),
    EvalQuestion(id="q3", question="?", history=HISTORY, gold=("t3", "t4"), category="b"),
    EvalQuestion(id="q4", question="?", history=HISTORY, gold=("t5",)),
]


def test_recall_per_budget_and_category() -> None:
    report = evaluate(QUESTIONS, [FirstGoldWhenSmall()], [10, 100], dataset="toy")
    assert report.categories == ("all", "a", "b")
    small = report.get("oracle", 10)
    assert small.n == 4
    assert small.recall == pytest.approx((0.5 + 1 + 0.5 + 1) / 4)
    assert report.get("oracle", 10, "a").recall == pytest.approx(0.75)
    assert report.get("oracle", 10, "a").n == 2
    assert report.get("oracle", 10, "b").recall == pytest.approx(0.5)
    assert report.get("oracle", 100).recall == 1.0
    assert small.over_budget == 0
    assert 0.0 <= small.build_ms_p50 <= small.build_ms_p95


def test_over_budget_builds_score_zero_and_are_counted() -> None:
    report = evaluate(QUESTIONS, [Overflowing(), FirstGoldWhenSmall()], [5], dataset="toy")
    over = report.get("overflow", 5)
    assert over.recall == 0.0 and over.over_budget == 4
    assert report.get("overflow", 5, "b").over_budget == 1
    assert report.get("oracle", 5).over_budget == 0


def test_limit_and_streaming_input() -> None:
    report = evaluate(iter(QUESTIONS), [RecencyBaseline()], [1000], limit=2)
    assert report.get("recency", 1000).n == 2
    assert report.get("recency", 1000).recall == 1.0


def test_json_schema() -> None:
    report = evaluate(
        QUESTIONS, [FirstGoldWhenSmall(), RecencyBaseline()], [10, 100], dataset="toy"
    )
    doc = json.loads(report.to_json())
    assert doc["dataset"] == "toy"
    rows = doc["results"]
    assert len(rows) == 2 * 2 * 3
    required = {"system", "budget", "category", "n", "recall", "build_ms_p50", "build_ms_p95"}
    for row in rows:
        assert required <= set(row)
        assert isinstance(row["budget"], int) and isinstance(row["n"], int)
        assert 0.0 <= row["recall"] <= 1.0
    assert {row["system"] for row in rows} == {"oracle", "recency"}
    assert {row["category"] for row in rows} == {"all", "a", "b"}


def test_table_lists_systems_budgets_and_categories() -> None:
    report = evaluate(QUESTIONS, [FirstGoldWhenSmall(), Overflowing()], [10], dataset="toy")
    table = report.table()
    assert "oracle" in table and "overflow" in table
    assert "0.750" in table  # category "a" at budget 10
    assert "0.000!4" in table  # four over-budget builds flagged
    assert "p50 / p95" in table


@pytest.mark.parametrize(("budgets", "limit"), [([], None), ([0], None), ([-5], None), ([100], 0)])
def test_bad_arguments(budgets: list[int], limit: int | None) -> None:
    with pytest.raises(ConfigError):
        evaluate(QUESTIONS, [RecencyBaseline()], budgets, limit=limit)


def test_prepare_runs_once_per_history_and_is_reported() -> None:
    seen: list[int] = []

    class Preparing(RecencyBaseline):
        def prepare(self, history: tuple[Turn, ...]) -> None:
            seen.append(len(history))

    other = HISTORY[:3]
    questions = [*QUESTIONS[:2], EvalQuestion(id="x", question="?", history=other, gold=("t0",))]
    report = evaluate(questions, [Preparing(), FirstGoldWhenSmall()], [10, 100])
    assert seen == [6, 3]
    assert report.get("recency", 10).histories == 2
    assert report.get("recency", 100, "a").index_ms_p50 >= 0.0
    assert report.get("oracle", 10).histories == 0
    assert "history indexing" in report.table()


def test_duplicate_system_names_are_refused() -> None:
    with pytest.raises(ConfigError, match="unique"):
        evaluate(QUESTIONS, [RecencyBaseline(), RecencyBaseline()], [100])
