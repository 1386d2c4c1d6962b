"""UnifiedReranker: the seed's weighted signals plus rank fusion, origin diversity, dedup."""

from __future__ import annotations

import math
from itertools import pairwise

import pytest

from loomctx.errors import ConfigError
from loomctx.retrieval.reranker import (
    Candidate,
    RerankWeights,
    UnifiedReranker,
    label_terms,
    specificity,
    voice,
)


def cand(id: str, content: str = "", *, origin: str = "memory:L4", vector: float = 0.0,
         tokens: int = 0, **ranks: int) -> Candidate:
    return Candidate(id=id, content=content or f"text of {id}", origin=origin, vector=vector,
                     tokens=tokens, ranks=dict(ranks))


def only(**weights: float) -> RerankWeights:
    """Every signal off except the ones given."""
    base = {"vector": 0.0, "overlap": 0.0, "diversity": 0.0, "length": 0.0, "fusion": 0.0,
            "named": 0.0, "voice": 0.0, "lexical_trust": 0.0}
    return RerankWeights(**{**base, **weights})  # type: ignore[arg-type]


def test_default_weights_are_the_seed_weights() -> None:
    w = RerankWeights()
    assert (w.vector, w.overlap, w.diversity, w.length) == (0.40, 0.35, 0.15, 0.10)
    assert w.list_weights == {"lexical": 1.0, "dense": 1.0, "expanded": 0.5, "time": 3.0,
                              "bridge": 1.5}
    assert w.adjacent == 1.0
    assert w.named == 0.10


def test_scores_combine_the_signals_with_their_weights() -> None:
    a = cand("a", "refund policy for customs", vector=0.8, tokens=12, lexical=0)
    b = cand("b", "weather report", origin="knowledge:docs", vector=0.4, tokens=48,
             dense=0, lexical=1)
    # Without the per-question lexical trust (see the trust tests below).
    first, second = UnifiedReranker(RerankWeights(lexical_trust=0.0)).rerank(
        "refund for customs", [b, a])
    assert (first.id, second.id) == ("a", "b")
    # a: best vector, both content terms ("for" is a stopword), half the length saturation,
    # one list at rank 0 against b's two lists; both are the first of their origin.
    fusion_a = (1 / 10) / (1 / 10 + 1 / 11)  # rrf_k = 10
    assert first.signals == pytest.approx(
        {"vector": 1.0, "overlap": 1.0, "length": 0.5, "fusion": fusion_a, "named": 0.0,
         "voice": 0.0, "diversity": 1.0})
    assert first.score == pytest.approx(0.40 + 0.35 + 0.10 * 0.5 + 0.60 * fusion_a + 0.15)
    assert second.signals == pytest.approx(
        {"vector": 0.5, "overlap": 0.0, "length": 1.0, "fusion": 1.0, "named": 0.0,
         "voice": 0.0, "diversity": 1.0})
    assert second.score == pytest.approx(0.40 * 0.5 + 0.10 + 0.60 + 0.15)


def test_each_weight_alone_decides_the_order() -> None:
    def fresh() -> list[Candidate]:
        return [cand("near", "the pasta recipe", vector=0.9, tokens=5, dense=0),
                cand("words", "customs hold in Lyon", vector=0.1, tokens=5, lexical=3),
                cand("long", "an unrelated but long note", vector=0.2, tokens=40, lexical=9)]

    def order(weights: RerankWeights) -> list[str]:
        return [c.id for c in UnifiedReranker(weights).rerank("customs Lyon", fresh())]

    assert order(only(vector=1)) == ["near", "long", "words"]
    assert order(only(overlap=1)) == ["words", "long", "near"]  # ties by id
    assert order(only(length=1)) == ["long", "near", "words"]
    assert order(only(fusion=1)) == ["near", "words", "long"]  # 1/10 > 1/13 > 1/19


@pytest.mark.parametrize(("text", "terms"), [
    ("Caroline: I went to a support group.", {"caroline"}),
    ("[D1:3] (2023-05-08 13:56) Caroline: I went.", {"caroline"}),  # decoration skipped
    ("Kiss and Tell (1945 film): Kiss and Tell is a comedy.", {"kiss", "tell"}),  # aside out
    ("Read https://example.com: it helps.", set()),  # a colon inside a URL is no label
    ("Note:no space after the colon", set()),
    ("no label at all", set()),
    (f"{'word ' * 20}: a label longer than 60 characters is prose", set()),
])
def test_label_terms(text: str, terms: set[str]) -> None:
    assert label_terms(text) == terms


def test_a_candidate_whose_label_the_question_names_gets_the_named_bonus() -> None:
    def fresh(speaker: str = "Caroline") -> list[Candidate]:
        return [cand("a", "Melanie: I painted a lake at sunrise.", vector=0.5),
                cand("b", f"{speaker}: I painted a lake at sunrise.", vector=0.5)]

    question = "What did Caroline paint?"
    ranked = UnifiedReranker(only(named=1)).rerank(question, fresh())
    assert [c.id for c in ranked] == ["b", "a"]
    assert [c.signals["named"] for c in ranked] == [1.0, 0.0]
    assert ranked[0].score - ranked[1].score == pytest.approx(1.0)
    # Off, the two tie and the order is by id.
    assert [c.id for c in UnifiedReranker(only()).rerank(question, fresh())] == ["a", "b"]
    # Every term of the label must be in the question.
    partly = UnifiedReranker(only(named=1)).rerank(question, fresh("Caroline Smith"))
    assert [c.signals["named"] for c in partly] == [0.0, 0.0]
    titled = UnifiedReranker(only(named=1)).rerank(
        "Who starred in Kiss and Tell?",
        [cand("a", "Shirley Temple: an actress."), cand("b", "Kiss and Tell (film): a comedy.")])
    assert [c.id for c in titled] == ["b", "a"]


def test_rank_fusion_weighs_each_recall_list() -> None:
    ranked = UnifiedReranker(only(fusion=1)).rerank("q", [
        cand("expanded_first", expanded=0), cand("lexical_second", lexical=1)])
    # The expanded query's list weighs 0.5: 0.5/10 < 1/11.
    assert [c.id for c in ranked] == ["lexical_second", "expanded_first"]
    assert ranked[1].signals["fusion"] == pytest.approx((0.5 / 10) / (1 / 11))
    custom = RerankWeights(vector=0, overlap=0, diversity=0, length=0, fusion=1,
                           list_weights={"lexical": 1.0, "expanded": 2.0})
    ranked = UnifiedReranker(custom).rerank("q", [
        cand("expanded_first", expanded=0), cand("lexical_second", lexical=1)])
    assert [c.id for c in ranked] == ["expanded_first", "lexical_second"]


def test_origin_diversity_decays_within_an_origin() -> None:
    ranked = UnifiedReranker(only(diversity=1)).rerank("q", [
        cand("d"), cand("c", origin="knowledge:docs"), cand("b"), cand("a")])
    # Before the bonus all tie (order by id): a, b, c, d. The memory ones get 1, 1/2, 1/3 and
    # the first knowledge one the full bonus.
    assert [c.id for c in ranked] == ["a", "c", "b", "d"]
    assert [c.signals["diversity"] for c in ranked] == pytest.approx([1, 1, 1 / 2, 1 / 3])


def test_diversity_can_lift_a_second_origin_above_a_third_repeat() -> None:
    # A flat fusion signal (k = 60), so the four are close before the bonus.
    ranked = UnifiedReranker(RerankWeights(rrf_k=60)).rerank("tide", [
        cand("m1", "tide tables", vector=0.9, tokens=24, lexical=0),
        cand("m2", "tide charts", vector=0.88, tokens=24, lexical=1),
        cand("m3", "tide clock", vector=0.86, tokens=24, lexical=2),
        cand("k1", "tide almanac", origin="knowledge:docs", vector=0.84, tokens=24, lexical=3)])
    assert [c.id for c in ranked] == ["m1", "k1", "m2", "m3"]


def test_a_tie_the_diversity_bonus_makes_is_broken_by_id() -> None:
    # 0.5 + 0.25 · 1/2 and 0.375 + 0.25 · 1 are both exactly 0.625: "a" goes before "z",
    # though "z" was ahead before the bonus.
    ranked = UnifiedReranker(only(vector=1, diversity=0.25)).rerank("q", [
        cand("m", origin="knowledge:x", vector=1.0), cand("z", origin="knowledge:x", vector=0.5),
        cand("a", origin="knowledge:y", vector=0.375)])
    assert [c.score for c in ranked] == [1.25, 0.625, 0.625]
    assert [c.id for c in ranked] == ["m", "a", "z"]


def test_one_origin_keeps_the_order_its_bonus_decays_along() -> None:
    ranked = UnifiedReranker(only(vector=1, diversity=0.5)).rerank("q", [
        cand(f"m{i}", vector=v) for i, v in enumerate([0.3, 0.9, 0.6, 0.6, 0.1])])
    assert [c.id for c in ranked] == ["m1", "m2", "m3", "m0", "m4"]
    assert all(a.score > b.score for a, b in pairwise(ranked))


def test_memory_tiers_are_one_origin_and_knowledge_bases_are_many() -> None:
    ranked = UnifiedReranker(only(diversity=1)).rerank("q", [
        cand("a", origin="memory:L1"), cand("b", origin="memory:L2"),
        cand("c", origin="memory:L4"), cand("d", origin="knowledge:docs"),
        cand("e", origin="knowledge:wiki")])
    # A tier is not where a memory came from: b and c are second and third of "memory".
    bonus = {c.id: c.signals["diversity"] for c in ranked}
    assert bonus == pytest.approx({"a": 1, "b": 1 / 2, "c": 1 / 3, "d": 1, "e": 1})
    assert [c.id for c in ranked] == ["a", "d", "e", "b", "c"]


def test_the_fusion_signal_separates_the_top_ranks() -> None:
    ranked = UnifiedReranker(only(fusion=1)).rerank("q", [
        cand(f"r{i}", lexical=i, dense=i) for i in range(12)])
    # With k = 10 the tenth-ranked keeps about half the first's signal (k = 60 kept 0.87).
    assert ranked[9].signals["fusion"] == pytest.approx(10 / 19)
    assert ranked[9].signals["fusion"] < 0.6


def test_duplicates_keep_the_higher_vector_and_the_best_ranks() -> None:
    low = cand("low", "Hello   world", vector=0.2, lexical=3)
    high = cand("high", "Hello world", vector=0.9, dense=0, lexical=5)
    other = cand("other", "Goodbye", vector=0.1)
    kept = UnifiedReranker().dedup([low, high, other])
    assert [c.id for c in kept] == ["high", "other"]
    assert kept[0].ranks == {"dense": 0, "lexical": 3}
    assert [c.id for c in UnifiedReranker().rerank("hello", [low, high])] == ["high"]


def test_edge_values() -> None:
    assert UnifiedReranker().rerank("q", []) == []
    (c,) = UnifiedReranker().rerank("the of and", [cand("x", "the cat", vector=-0.5)])
    assert c.signals["vector"] == 0.0  # negative similarity counts as none
    assert c.signals["overlap"] == 0.0  # a query of stopwords matches nothing
    assert c.signals["length"] == 0.5  # unknown length is neutral
    assert c.signals["fusion"] == 0.0  # in no recall list
    assert math.isfinite(c.score)


def test_order_is_deterministic_ties_by_id() -> None:
    items = [cand(i, f"same words {i}", vector=0.5, tokens=10, lexical=0) for i in "cab"]
    first = [c.id for c in UnifiedReranker().rerank("words", items)]
    again = [c.id for c in UnifiedReranker().rerank("words", list(reversed(items)))]
    assert first == again == ["a", "b", "c"]


@pytest.mark.parametrize(("kwargs", "fragment"), [
    ({"vector": -0.1}, "vector"),
    ({"fusion": -1.0}, "fusion"),
    ({"overlap": float("nan")}, "overlap"),
    ({"length": float("inf")}, "length"),
    ({"rrf_k": 0}, "rrf_k"),
    ({"length_tokens": 0}, "length_tokens"),
    ({"list_weights": {"dense": -1.0}}, "dense"),
    ({"list_weights": {"lexical": float("nan")}}, "lexical"),
    ({"adjacent": -0.5}, "adjacent"),
    ({"adjacent": 1.5}, r"adjacent must be in \[0, 1\]"),
    ({"adjacent": float("nan")}, "adjacent"),
    ({"named": -0.1}, "named"),
    ({"named": float("nan")}, "named"),
])
def test_weights_are_validated(kwargs: dict, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        RerankWeights(**kwargs)


def test_specificity_is_high_for_rare_terms_and_low_for_common_ones() -> None:
    docs = [{"ann", "hike"}, {"ann", "cook"}, {"ann", "read"}, {"ann", "swim", "zanzibar"}]
    assert specificity({"zanzibar"}, docs) == pytest.approx(1.0)
    assert specificity({"ann"}, docs) < 0.3
    assert specificity({"ann"}, docs) < specificity({"ann", "zanzibar"}, docs) < 1.0
    assert specificity({"absent"}, docs) == 0.0  # no candidate has it: says nothing
    assert specificity(set(), docs) == specificity({"ann"}, []) == 0.0


def _pool(rare: bool) -> list[Candidate]:
    """A candidate first in both lists but far in meaning, one nearest in meaning, and filler
    that shares the common term."""
    lex = cand("lex", "ann went to zanzibar" if rare else "ann went out", vector=0.1,
               lexical=0, dense=1)
    vec = cand("vec", "ann travelled to an island", vector=0.9, dense=0)
    filler = [cand(f"f{i}", f"ann said thing {i}", vector=0.05, lexical=i + 1, dense=i + 2)
              for i in range(8)]
    return [lex, vec, *filler]


def test_lexical_trust_lifts_the_lexical_list_only_for_specific_questions() -> None:
    base = only(vector=0.4, fusion=0.6)
    trusting = only(vector=0.4, fusion=0.6, lexical_trust=4.0, trust_floor=0.5)
    for rare, query in ((True, "zanzibar"), (False, "ann")):
        plain = UnifiedReranker(base).rerank(query, _pool(rare))
        trusted = UnifiedReranker(trusting).rerank(query, _pool(rare))
        assert plain[0].id == "vec"
        # Only a question whose terms few candidates share moves to the fused ranking.
        assert trusted[0].id == ("lex" if rare else "vec")


@pytest.mark.parametrize("floor", [-0.1, 1.0, math.nan])
def test_trust_floor_must_be_in_the_unit_interval(floor: float) -> None:
    with pytest.raises(ConfigError, match="trust_floor"):
        RerankWeights(trust_floor=floor)


def test_a_neighbour_inherits_a_share_of_its_matchs_fusion_credit() -> None:
    match = cand("q", lexical=0, dense=0)
    answer = Candidate(id="a", content="text of a", origin="memory:L4", adjacent_to=("q",))
    other = cand("o", lexical=1)
    for share in (1.0, 0.5, 0.0):
        ranked = {c.id: c for c in UnifiedReranker(only(fusion=1.0, adjacent=share)).rerank(
            "words", [match, answer, other])}
        assert ranked["a"].signals["fusion"] == pytest.approx(share)  # of the match's own
        assert ranked["q"].signals["fusion"] == 1.0
    # Credit of its own is kept, and adds up with what it inherits.
    both = Candidate(id="b", content="text of b", origin="memory:L4", ranks={"dense": 4},
                     adjacent_to=("q", "o"))
    ranked = {c.id: c for c in UnifiedReranker(only(fusion=1.0, adjacent=0.5)).rerank(
        "words", [match, both, other])}
    k = RerankWeights().rrf_k
    top = 2 / k
    assert ranked["b"].signals["fusion"] == pytest.approx((1 / (k + 4) + 0.5 * top) / top)


def test_duplicates_keep_every_match_they_neighbour() -> None:
    a = Candidate(id="a", content="same words", origin="memory:L4", vector=0.9,
                  adjacent_to=("x",))
    b = Candidate(id="b", content="same words", origin="memory:L4", vector=0.1,
                  adjacent_to=("y", "x"))
    (kept,) = UnifiedReranker().dedup([a, b])
    assert kept.id == "a" and kept.adjacent_to == ("x", "y")


@pytest.mark.parametrize(
    ("question", "role"),
    [
        ("How long have I been living in my current apartment?", "user"),
        ("My sister's name?", "user"),
        ("我住在哪里？", "user"),
        ("What did you recommend for my trip?", None),  # it may ask the assistant's words
        ("Can you suggest something I could cook?", None),
        ("What did Caroline research?", None),  # third person: no role
        ("你推荐了什么？", None),
    ],
)
def test_voice_reads_whose_account_a_question_asks(question: str, role: str | None) -> None:
    assert voice(question) == role


def test_a_question_about_oneself_prefers_the_users_own_messages() -> None:
    def pool() -> list[Candidate]:
        reply = cand("a", "A long reply about apartments in Harajuku", vector=0.9)
        told = cand("u", "I moved into my Harajuku apartment in May", vector=0.8)
        reply.role, told.role = "assistant", "user"
        return [reply, told]

    reranker = UnifiedReranker(only(vector=0.4, voice=0.5))
    mine = reranker.rerank("How long have I lived in my apartment?", pool())
    asked = reranker.rerank("How long has Ann lived in Harajuku?", pool())
    assert [c.id for c in mine] == ["u", "a"] and mine[0].signals["voice"] == 1.0
    assert [c.id for c in asked] == ["a", "u"]  # no role named: similarity decides


def test_voice_orders_nothing_where_every_candidate_has_one_role() -> None:
    def pool() -> list[Candidate]:
        out = [cand("p1", "Make Mine Music", vector=0.9), cand("p2", "Melody Time", vector=0.5)]
        for c in out:
            c.role = "user"  # passages of a document set
        return out

    ranked = UnifiedReranker(only(vector=0.4, voice=0.5)).rerank(
        "Which film was released more recently, Make Mine Music or Melody Time?", pool())
    assert all(c.signals["voice"] == 0.0 for c in ranked)
    assert [round(c.score, 6) for c in ranked] == [0.4, round(0.4 * 0.5 / 0.9, 6)]
