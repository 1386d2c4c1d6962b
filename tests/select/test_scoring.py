"""Scoring: recency decay, per-source normalised relevance, composite, MMR, option checks."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loomctx.errors import ConfigError
from loomctx.items import RAW_RELEVANCE, ContextItem
from loomctx.select.scoring import SelectOptions, composite, mmr_order, recency, score

NOW = 1_000_000.0


def ev(iid: str, text: str, *, source: str = "RAG", priority: float = 0.5,
       timestamp: float | None = None, kind: str = "evidence") -> ContextItem:
    return ContextItem(id=iid, source=source, content=text, kind=kind,  # type: ignore[arg-type]
                       priority=priority, timestamp=timestamp)


def test_recency_is_exponential_decay() -> None:
    assert recency(None, NOW, 3600) == 1.0
    assert recency(NOW + 50, NOW, 3600) == 1.0  # future timestamps are not boosted past 1
    assert recency(NOW - 3600, NOW, 3600) == pytest.approx(math.exp(-1))
    assert recency(NOW - 7200, NOW, 3600) == pytest.approx(math.exp(-2))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(a=st.floats(0, 1e7), b=st.floats(0, 1e7), tau=st.floats(1, 1e6))
def test_recency_is_monotone_and_bounded(a: float, b: float, tau: float) -> None:
    ra, rb = recency(NOW - a, NOW, tau), recency(NOW - b, NOW, tau)
    assert 0.0 <= ra <= 1.0
    if a <= b:
        assert ra >= rb


def test_relevance_is_normalised_per_source_and_composite_weighted() -> None:
    items = [
        ev("a", "refund policy for customs hold delays"),
        ev("b", "the Hamburg depot opens at six"),
        ev("c", "refund requests within 30 days", source="other"),
        ev("d", "pickup windows for Milano", source="other"),
    ]
    opts = SelectOptions()
    score(items, "refund customs hold", NOW, opts)
    assert items[0].scores["relevance"] == 1.0
    assert items[2].scores["relevance"] == 1.0  # each source's best scores 1
    assert items[1].scores["relevance"] == 0.0
    assert items[3].scores["relevance"] == 0.0
    for it in items:
        expected = (0.7 * it.scores["relevance"] + 0.3 * it.scores["recency"]) * (
            0.5 + 0.5 * it.priority)
        assert it.scores["composite"] == pytest.approx(expected)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(rows=st.lists(st.tuples(st.floats(0, 50), st.floats(0, 1),
                               st.sampled_from([None, NOW + 500.0, NOW - 3600.0])
                               | st.floats(NOW - 1e7, NOW + 1e3)),
                     min_size=1, max_size=8),
       tau=st.floats(1, 1e6), w_rel=st.floats(0, 1), w_rec=st.floats(0, 1),
       query=st.sampled_from(["refund", "  "]))
def test_score_gives_exactly_recency_and_composite(
        rows: list[tuple[float, float, float | None]], tau: float, w_rel: float, w_rec: float,
        query: str) -> None:
    # score() inlines both functions for speed: it must agree with them to the last bit
    items = [ev(f"i{k}", "text", priority=p, timestamp=t) for k, (_, p, t) in enumerate(rows)]
    for it, (raw, _, _) in zip(items, rows, strict=True):
        it.scores[RAW_RELEVANCE] = raw
    opts = SelectOptions(recency_tau=tau, relevance_weight=w_rel, recency_weight=w_rec)
    score(items, query, NOW, opts)
    top = max(raw for raw, _, _ in rows)
    for it, (raw, _, _) in zip(items, rows, strict=True):
        rel = it.priority if not query.strip() else raw / top if top > 0 else 0.0
        rec = recency(it.timestamp, NOW, tau)
        assert (it.scores["relevance"], it.scores["recency"]) == (rel, rec)
        assert it.scores["composite"] == composite(rel, rec, it.priority, opts)


def test_precomputed_bm25_is_used_and_history_is_not_scored() -> None:
    a, b = ev("a", "x"), ev("b", "y")
    a.scores[RAW_RELEVANCE], b.scores[RAW_RELEVANCE] = 4.0, 1.0  # a source's own scores
    msg = ev("m", "refund", kind="message")
    score([a, b, msg], "unrelated words", NOW, SelectOptions())
    assert a.scores["relevance"] == 1.0 and b.scores["relevance"] == 0.25
    assert msg.scores == {}


def test_without_a_query_relevance_is_the_item_priority() -> None:
    items = [ev("a", "anything", priority=0.9), ev("b", "else", priority=0.2)]
    score(items, "   ", NOW, SelectOptions())
    assert [it.scores["relevance"] for it in items] == [0.9, 0.2]
    assert items[0].scores["composite"] > items[1].scores["composite"]


def test_older_items_score_lower_when_equally_relevant() -> None:
    items = [ev("new", "refund policy", timestamp=NOW - 10),
             ev("old", "refund policy", timestamp=NOW - 36_000)]
    score(items, "refund", NOW, SelectOptions())
    assert items[0].scores["composite"] > items[1].scores["composite"]


def test_mmr_demotes_near_duplicates() -> None:
    items = [ev("a", "refund policy customs hold"), ev("a2", "refund policy customs hold"),
             ev("b", "Hamburg pickup Tuesday")]
    for it, c in zip(items, (0.9, 0.85, 0.6), strict=True):
        it.scores["composite"] = c
    terms = {it.id: frozenset(it.content.lower().split()) for it in items}
    assert [i.id for i in mmr_order(items, 1.0, terms)] == ["a", "a2", "b"]
    assert [i.id for i in mmr_order(items, 0.5, terms)] == ["a", "b", "a2"]
    assert sorted(i.id for i in mmr_order(items, 0.5, terms)) == ["a", "a2", "b"]



def _eager_mmr(rel: list[float], sets: list[frozenset[str]], weight: float) -> list[int]:
    """The textbook MMR loop: every step rescans every candidate left."""
    max_sim = [0.0] * len(rel)
    left = list(range(len(rel)))
    order: list[int] = []
    while left:
        best = max(left, key=lambda i: (rel[i] - weight * max_sim[i], -i))
        left.remove(best)
        order.append(best)
        for i in left:
            a, b = sets[i], sets[best]
            if a and b:
                sim = len(a & b) / len(a | b)
                max_sim[i] = max(max_sim[i], sim)
    return order


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, 0.25, 0.5, 0.9, 1.0]),
                          st.frozensets(st.sampled_from("abcdefgh"), max_size=5)),
                min_size=3, max_size=40),
       st.sampled_from([0.0, 0.3, 0.7, 0.95]))
def test_mmr_order_is_the_eager_loops_order(cands: list[tuple[float, frozenset[str]]],
                                            lam: float) -> None:
    """The lazy MMR takes the same item at every step as rescanning all of them, ties
    (many equal scores and term sets here) included."""
    items = [ev(f"i{n}", " ".join(sorted(t)), timestamp=None) for n, (_, t) in enumerate(cands)]
    for it, (c, _) in zip(items, cands, strict=True):
        it.scores["composite"] = c
    terms = {it.id: t for it, (_, t) in zip(items, cands, strict=True)}
    ranked = sorted(items, key=lambda it: (-it.scores["composite"], it.seq))
    want = _eager_mmr([lam * it.scores["composite"] for it in ranked],
                      [terms[it.id] for it in ranked], 1 - lam)
    assert [it.id for it in mmr_order(items, lam, terms)] == [ranked[i].id for i in want]

@pytest.mark.parametrize(
    "kwargs",
    [{"relevance_weight": 1.5}, {"recency_weight": -0.1}, {"min_relevance": 2.0},
     {"mmr_lambda": -1.0}, {"recency_tau": 0.0}],
)
def test_select_options_are_validated(kwargs: dict) -> None:
    with pytest.raises(ConfigError) as info:
        SelectOptions(**kwargs)
    assert repr(next(iter(kwargs.values()))) in str(info.value)


def test_per_build_copies_every_field() -> None:
    import dataclasses

    from loomctx.items import ContextItem, Tier
    from loomctx.select.rank import per_build

    values = {"id": "i", "source": "s", "content": "c", "kind": "message", "role": "user",
              "tier": Tier.P1, "priority": 0.9, "timestamp": 5.0, "group": "g",
              "message": {"role": "user", "content": "c"}, "metadata": {"k": 1},
              "scores": {"composite": 0.5}, "tokens": 7, "seq": 3}
    assert set(values) == {f.name for f in dataclasses.fields(ContextItem)}
    item = ContextItem(**values)  # type: ignore[arg-type]
    copy = per_build(item)
    assert {f: getattr(copy, f) for f in values} == values
    copy.scores["composite"] = 0.1
    assert item.scores == {"composite": 0.5}  # scores are the copy's own


def test_mmr_ranks_by_composite_then_by_seq() -> None:
    items = []
    for k, (value, seq) in enumerate([(0.5, 3), (0.9, 7), (0.5, 1), (0.9, 2), (0.5, 2)]):
        it = ev(f"i{k}", f"text {k}")
        it.scores["composite"], it.seq = value, seq
        items.append(it)
    order = [(it.scores["composite"], it.seq) for it in mmr_order(items, 1.0, {})]
    assert order == [(0.9, 2), (0.9, 7), (0.5, 1), (0.5, 2), (0.5, 3)]
