"""The recency, BM25 and dense baselines and their shared packer."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loomctx.embed.fake import HashingEmbedder
from loomctx.eval import baselines
from loomctx.eval.baselines import (
    BM25Baseline,
    DenseBaseline,
    EvalSystem,
    RecencyBaseline,
    pack_turns,
)
from loomctx.eval.metric import count_tokens
from loomctx.eval.records import EvalQuestion, Turn

_FILLER = [
    "Ann: the weather was grey all week and we stayed inside reading",
    "Bob: I cooked pasta again, nothing special happened at work",
    "Ann: my sister called about the holidays and the train tickets",
    "Bob: the garden needs water, the roses look tired this summer",
]


def _history(n: int = 40) -> tuple[Turn, ...]:
    turns = [
        Turn(
            id=f"t{i}",
            role="user" if i % 2 == 0 else "assistant",
            content=f"{_FILLER[i % len(_FILLER)]} ({i})",
            timestamp=float(i),
        )
        for i in range(n)
    ]
    turns[7] = Turn(
        id="t7",
        role="assistant",
        content="Bob: I adopted a greyhound named Pixel from the shelter",
        timestamp=7.0,
    )
    return tuple(turns)


def _question(
    history: tuple[Turn, ...], text: str, gold: tuple[str, ...] = ("t7",)
) -> EvalQuestion:
    return EvalQuestion(id="q", question=text, history=history, gold=gold)


def _systems() -> list[EvalSystem]:
    return [RecencyBaseline(), BM25Baseline(), DenseBaseline(HashingEmbedder())]


def test_systems_follow_the_protocol() -> None:
    for system in _systems():
        assert isinstance(system, EvalSystem)
    assert [s.name for s in _systems()] == ["recency", "bm25", "dense"]


def test_recency_keeps_the_last_turns_in_order() -> None:
    history = _history()
    out = RecencyBaseline().run(_question(history, "anything"), 60)
    assert out.included_ids == tuple(t.id for t in history[-len(out.included_ids) :])
    assert 1 <= len(out.included_ids) < len(history)
    assert out.context == "\n".join(t.content for t in history[-len(out.included_ids) :])
    assert out.tokens == count_tokens(out.context) <= 60


@pytest.mark.parametrize(
    "system", [BM25Baseline(), DenseBaseline(HashingEmbedder())], ids=["bm25", "dense"]
)
def test_relevance_baselines_find_the_matching_turn_at_a_small_budget(system: EvalSystem) -> None:
    history = _history()
    out = system.run(_question(history, "Which greyhound did Bob adopt from the shelter?"), 20)
    assert out.included_ids == ("t7",)
    assert history[7].content in out.context


def test_chosen_lines_are_put_back_in_chronological_order() -> None:
    history = _history()
    out = BM25Baseline().run(_question(history, "greyhound Pixel shelter roses garden"), 200)
    positions = [int(i[1:]) for i in out.included_ids]
    assert positions == sorted(positions) and 7 in positions
    assert out.context.split("\n") == [history[p].content for p in positions]


def test_per_history_work_is_cached() -> None:
    calls: list[int] = []

    class Counting(HashingEmbedder):
        def embed(self, texts):  # type: ignore[no-untyped-def]
            calls.append(len(texts))
            return super().embed(texts)

    history = _history()
    dense = DenseBaseline(Counting())
    for budget in (50, 100, 200):
        dense.run(_question(history, "greyhound"), budget)
    assert calls.count(len(history)) == 1


def test_empty_history_gives_an_empty_context() -> None:
    for system in _systems():
        out = system.run(_question((), "anything", gold=()), 100)
        assert out.context == "" and out.included_ids == () and out.tokens == 0


def test_exact_count_corrects_a_wrong_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    history = _history()
    monkeypatch.setattr(baselines, "turn_token_counts", lambda h: [0] * len(h))
    out = pack_turns(history, range(len(history)), 50)
    assert count_tokens(out.context) <= 50
    assert out.included_ids and out.included_ids[0] == "t0"


_PIECES = [*"ab xyz\n\t.,!?é中文", "  ", "Pixel", " the", "<|endoftext|>"]
_TEXT = st.lists(st.sampled_from(_PIECES), max_size=15).map("".join)


@settings(max_examples=60, deadline=None)
@given(
    contents=st.lists(_TEXT, min_size=0, max_size=25),
    budget=st.integers(min_value=1, max_value=300),
    question=_TEXT,
)
def test_context_never_exceeds_the_budget(contents: list[str], budget: int, question: str) -> None:
    history = tuple(Turn(id=f"t{i}", role="user", content=c) for i, c in enumerate(contents))
    q = _question(history, question, gold=())
    for system in _systems():
        out = system.run(q, budget)
        assert count_tokens(out.context) <= budget
        assert out.tokens == count_tokens(out.context)
        assert len(set(out.included_ids)) == len(out.included_ids)
        for turn_id in out.included_ids:
            assert history[int(turn_id[1:])].content in out.context
