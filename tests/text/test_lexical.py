"""Tokenization and BM25: behaviour on English, Chinese and mixed text, and agreement of the
inverted index with a direct BM25 computation."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loomctx.errors import ConfigError
from loomctx.text.lexical import BM25Index, content_terms, normalize_scores, tokenize
from loomctx.text.stopwords import CHINESE_STOPWORDS, ENGLISH_STOPWORDS


def test_english_words_are_lowercased_and_split_on_punctuation() -> None:
    assert tokenize("Hello, World! It's a test-case.") == [
        "hello",
        "world",
        "it",
        "s",
        "a",
        "test",
        "case",
    ]


def test_plural_endings_are_stripped_consistently() -> None:
    assert tokenize("weekends cats stories") == ["weekend", "cat", "story"]
    assert tokenize("class bus analysis") == ["class", "bus", "analysis"]


def test_verb_endings_are_stripped_so_a_question_finds_its_answer() -> None:
    assert tokenize("What did Caroline research?", drop_stopwords=True) == ["caroline", "research"]
    assert tokenize("Researching adoption agencies", drop_stopwords=True) == [
        "research", "adoption", "agency"]
    assert tokenize("painting paints painted") == ["paint", "paint", "paint"]


def test_numbers_are_kept() -> None:
    assert tokenize("Version 3.14 shipped in 2024") == [
        "version",
        "3",
        "14",
        "ship",
        "in",
        "2024",
    ]


def test_chinese_is_segmented_into_words() -> None:
    tokens = tokenize("我喜欢在周末去爬山")
    assert "爬山" in tokens
    assert "周末" in tokens
    assert "".join(tokens) == "我喜欢在周末去爬山"


def test_chinese_stopwords_are_dropped() -> None:
    assert tokenize("我喜欢在周末去爬山", drop_stopwords=True) == ["喜欢", "周末", "爬山"]


def test_mixed_text_keeps_both_scripts() -> None:
    tokens = tokenize("用GPT-4o模型做检索 retrieval")
    assert tokens[:1] == ["用"]
    assert {"gpt", "4o", "模型", "检索", "retrieval"} <= set(tokens)


def test_kana_and_hangul_become_characters_and_other_scripts_words() -> None:
    assert tokenize("カナ 한글 Привет café") == ["カ", "ナ", "한", "글", "привет", "café"]


def test_emoji_and_symbols_are_dropped() -> None:
    assert tokenize("great 👍🎉 job!!! ✨") == ["great", "job"]
    assert tokenize("😀") == []
    assert tokenize("") == []


def test_english_stopwords_are_dropped_only_when_asked() -> None:
    assert tokenize("the cat is on the mat", drop_stopwords=True) == ["cat", "mat"]
    assert "the" in tokenize("the cat")


def test_returned_list_is_a_fresh_copy() -> None:
    first = tokenize("memoised text")
    first.append("mutated")
    assert tokenize("memoised text") == ["memois", "text"]


def test_stopword_sets_have_the_expected_size() -> None:
    assert 150 <= len(ENGLISH_STOPWORDS) <= 250
    assert 150 <= len(CHINESE_STOPWORDS) <= 250
    assert "the" in ENGLISH_STOPWORDS and "的" in CHINESE_STOPWORDS


def test_content_terms_ranks_by_frequency_then_first_seen() -> None:
    text = "Hiking on weekends. I love hiking; weekends are for hiking and 爬山, 爬山!"
    assert content_terms(text, 3) == ["hike", "weekend", "爬山"]
    assert content_terms(text, 0) == []
    with pytest.raises(ConfigError):
        content_terms(text, -1)


def test_normalize_scores() -> None:
    assert np.allclose(normalize_scores(np.array([0.0, 2.0, 1.0])), [0.0, 1.0, 0.5])
    assert np.array_equal(normalize_scores(np.zeros(3)), np.zeros(3))
    assert normalize_scores(np.array([], dtype=np.float32)).shape == (0,)


DOCS = [
    "the weather is nice today",
    "how to configure the retrieval pipeline for long documents",
    "retrieval pipeline configuration",
    "我喜欢在周末去爬山",
    "the the the the the",
]


def test_exact_match_ranks_first() -> None:
    idx = BM25Index()
    idx.add(DOCS)
    assert len(idx) == len(DOCS)
    assert idx.search("retrieval pipeline configuration")[0][0] == 2
    assert idx.search("周末爬山")[0][0] == 3


def test_rare_terms_outweigh_common_ones() -> None:
    idx = BM25Index(drop_stopwords=False)
    idx.add(["apple common", "banana common", "cherry common", "zebra", "apple"])
    hits = dict(idx.search("common zebra"))
    assert hits[3] > hits[0]
    scores = idx.scores("common zebra")
    assert scores.dtype == np.float32 and scores.shape == (5,)
    assert scores[4] == 0.0


def test_search_orders_ties_by_index_and_honours_limit_and_mask() -> None:
    idx = BM25Index()
    idx.add(["alpha", "beta", "alpha", "alpha", "gamma"])
    assert [i for i, _ in idx.search("alpha")] == [0, 2, 3]
    assert [i for i, _ in idx.search("alpha", limit=2)] == [0, 2]
    mask = np.array([False, True, True, False, True])
    assert [i for i, _ in idx.search("alpha", mask=mask)] == [2]
    assert idx.search("alpha", limit=0) == []
    assert idx.search("nothing here") == []
    with pytest.raises(ConfigError):
        idx.search("alpha", mask=np.ones(2, dtype=bool))


def test_empty_index_scores_nothing() -> None:
    idx = BM25Index()
    assert idx.scores("anything").shape == (0,)
    assert idx.search("anything") == []


@pytest.mark.parametrize("kwargs", [{"k1": -1.0}, {"b": 1.5}, {"k1": float("nan")}])
def test_bad_parameters_raise_config_error(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        BM25Index(**kwargs)


def _reference_scores(docs: list[list[str]], query: list[str], k1: float, b: float) -> np.ndarray:
    n = len(docs)
    avg = sum(map(len, docs)) / n if n else 0.0
    out = np.zeros(n)
    for term in set(query):
        df = sum(term in d for d in docs)
        if df == 0:
            continue
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        for i, d in enumerate(docs):
            tf = Counter(d)[term]
            if tf:
                out[i] += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(d) / (avg or 1.0)))
    return out


_VOCAB = ["a", "b", "c", "d", "e", "f", "g"]
_doc = st.lists(st.sampled_from(_VOCAB), max_size=8)


@settings(max_examples=60, deadline=None)
@given(
    docs=st.lists(_doc, min_size=1, max_size=12),
    query=st.lists(st.sampled_from([*_VOCAB, "zz"]), min_size=1, max_size=4),
    k1=st.floats(0.0, 3.0),
    b=st.floats(0.0, 1.0),
    split=st.integers(0, 12),
)
def test_index_matches_reference_and_incremental_equals_batch(
    docs: list[list[str]], query: list[str], k1: float, b: float, split: int
) -> None:
    batch = BM25Index(k1, b)
    batch.add_tokens(docs)
    incremental = BM25Index(k1, b)
    incremental.add_tokens(docs[:split])
    incremental.scores_tokens(query)  # compile some postings before the rest arrives
    incremental.add_tokens(docs[split:])
    expected = _reference_scores(docs, query, k1, b)
    assert np.allclose(batch.scores_tokens(query), expected, rtol=1e-5, atol=1e-6)
    assert np.allclose(incremental.scores_tokens(query), expected, rtol=1e-5, atol=1e-6)


@settings(max_examples=150, deadline=None)
@given(
    docs=st.lists(_doc, min_size=1, max_size=40),
    query=st.lists(st.sampled_from([*_VOCAB, "zz"]), min_size=1, max_size=3),
    limit=st.integers(1, 45),
    masked=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_search_is_the_best_of_every_score(docs: list[list[str]], query: list[str], limit: int,
                                           masked: bool, seed: int) -> None:
    """Both ways to the cut (listing the matches first, or one partition of all scores when
    most documents match) give the best ``limit`` positive scores, ties by index."""
    idx = BM25Index(drop_stopwords=False)
    idx.add_tokens(docs)
    mask = np.random.default_rng(seed).random(len(docs)) < 0.7 if masked else None
    scores = idx.scores_tokens(query)
    if mask is not None:
        scores = np.where(mask, scores, np.float32(0.0))
    best = sorted((i for i in range(len(docs)) if scores[i] > 0),
                  key=lambda i: (-scores[i], i))[:limit]
    got = idx.search(" ".join(query), limit, mask=mask)
    assert [i for i, _ in got] == best
    assert [s for _, s in got] == [float(scores[i]) for i in best]


def test_add_tokenizes_like_add_tokens() -> None:
    by_text = BM25Index()
    by_text.add(DOCS)
    by_tokens = BM25Index()
    by_tokens.add_tokens([tokenize(d, drop_stopwords=True) for d in DOCS])
    assert np.array_equal(by_text.scores("retrieval 爬山"), by_tokens.scores("retrieval 爬山"))


@given(tf=st.integers(1, 40), dl=st.integers(1, 500), avgdl=st.floats(1.0, 400.0),
       n=st.integers(1, 10_000), df_share=st.floats(0.0, 1.0))
@settings(max_examples=200, deadline=None)
def test_one_bm25_formula_for_every_index(tf: int, dl: int, avgdl: float, n: int,
                                          df_share: float) -> None:
    """The shared pieces are the textbook Okapi BM25 term weight, for a Python float (the
    in-memory store) and for a float32 array (BM25Index) alike."""
    from loomctx.text.lexical import BM25_B, BM25_K1, bm25_idf, bm25_norm, bm25_weight

    df = max(1, round(df_share * n))
    idf = bm25_idf(n, df)
    textbook = idf * tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * dl / avgdl))
    scalar = bm25_weight(idf, tf, bm25_norm(dl, avgdl), BM25_K1 + 1)
    assert scalar == pytest.approx(textbook, rel=1e-12)
    lengths = np.array([dl, dl], dtype=np.float32)
    norm = bm25_norm(lengths, avgdl).astype(np.float32)
    tfs = np.array([tf, tf], dtype=np.float32)
    arr = bm25_weight(np.float32(idf), tfs, norm, np.float32(BM25_K1 + 1))
    assert arr.dtype == np.float32
    assert float(arr[0]) == pytest.approx(textbook, rel=1e-5)


def test_kept_term_weights_follow_every_add():
    """The weights kept per term change with each add (n, document frequency, lengths): a
    search after an add scores as a new index over all the documents would."""
    docs = ["red apple pie", "green apple", "red car", "blue sky over the sea"]
    grown = BM25Index()
    grown.add(docs[:2])
    first = grown.search("red apple", 5)
    grown.add(docs[2:])
    fresh = BM25Index()
    fresh.add(docs)
    assert grown.search("red apple", 5) == fresh.search("red apple", 5) != first
    np.testing.assert_array_equal(grown.scores("apple sky"), fresh.scores("apple sky"))


def test_common_terms_score_the_same_as_one_dense_array(monkeypatch: pytest.MonkeyPatch) -> None:
    """A term in most documents is added as one array over every document; the scores are
    those of the posting-list path, bit for bit, and documents without it stay at 0."""
    import loomctx.text.lexical as lexical

    docs = [["common", f"w{i}"] + (["rare"] if i == 3 else []) for i in range(40)] + [["other"]]
    query = ["common", "rare", "other"]
    dense = BM25Index()
    dense.add_tokens(docs)
    got = dense.scores_tokens(query)
    assert dense._weights["common"][0] is None and dense._weights["rare"][0] is not None
    monkeypatch.setattr(lexical, "DENSE_SHARE", 1.0)  # every term as a posting list
    sparse = BM25Index()
    sparse.add_tokens(docs)
    want = sparse.scores_tokens(query)
    assert sparse._weights["common"][0] is not None
    assert np.array_equal(got, want)
    assert got[40] > 0 and got[3] > got[2] > 0
    assert np.allclose(got, _reference_scores(docs, query, 1.2, 0.75), rtol=1e-5)
