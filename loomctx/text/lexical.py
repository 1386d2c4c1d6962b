"""CJK-aware tokenization and an incremental BM25 index.

Every build scores its candidates lexically, so this module is on the hot path. Tokenizing is one
compiled regex that splits text into runs: Latin/digit runs become lowercased words, runs of Han
characters are segmented into words by ``rjieba``, and kana/hangul fall back to single characters.
Porter's first step (:mod:`loomctx.text.stem`) makes "weekends" match "weekend" and "researched"
match "research" (the whole Porter stemmer measured no better). Short texts recur from turn to turn
(memory items, tool results), so their token tuples are memoised.

:class:`BM25Index` keeps an inverted index term → (doc ids, term frequencies) compiled lazily into
numpy arrays, so a query costs the postings of its own terms, not a pass over every document, and
documents can be added at any time.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from loomctx.errors import ConfigError
from loomctx.text.decoration import index_text
from loomctx.text.memo import WeightMemo
from loomctx.text.sample import sample
from loomctx.text.stem import stem
from loomctx.text.stopwords import STOPWORDS

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef\U00030000-\U0003134f"
_SYLLABIC = "\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f\u1100-\u11ff\u3130-\u318f\uac00-\ud7af"
# One pass, three alternatives: a Han run | one kana/hangul character | a word run of any other
# script (letters and digits; underscores and punctuation split).
_RUNS = re.compile(f"([{_HAN}]+)|([{_SYLLABIC}])|([^\\W_{_HAN}{_SYLLABIC}]+)")
_ASCII_RUNS = re.compile("[a-z0-9]+")
_MEMO_MAX_CHARS = 2048
_ASCII_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_STEMMED_ENDS = frozenset("sdg")  # -s, -ed, -eed, -ing: the only words the stemmer changes


_cut: Callable[[str], list[str]] | None = None


def _segment(han: str) -> list[str]:
    """Chinese word segmentation; ``rjieba`` loads its dictionary (~0.1 s) on first use."""
    global _cut
    if _cut is None:
        import rjieba

        _cut = rjieba.cut
    return _cut(han)


def _tokenize(text: str, drop: bool) -> list[str]:
    lowered = text.lower()
    if lowered.isascii():
        if drop:
            words = [w for w in _ASCII_RUNS.findall(lowered) if w not in STOPWORDS]
        else:
            words = _ASCII_RUNS.findall(lowered)
        return [stem(w) if w[-1] in _STEMMED_ENDS else w for w in words]
    out: list[str] = []
    append = out.append
    for han, syllable, word in _RUNS.findall(lowered):
        if word:
            if drop and word in STOPWORDS:
                continue
            append(stem(word) if word[-1] in _STEMMED_ENDS else word)
        elif han:
            if drop:
                out.extend(w for w in _segment(han) if w not in STOPWORDS)
            else:
                out.extend(_segment(han))
        else:
            append(syllable)
    return out


@lru_cache(maxsize=8192)
def _tokenize_memo(text: str, drop: bool) -> tuple[str, ...]:
    return tuple(_tokenize(text, drop))


def tokenize(text: str, *, drop_stopwords: bool = False) -> list[str]:
    """Split ``text`` into lowercased search terms (English words, Chinese words, CJK characters).

    Punctuation, symbols and emoji are dropped; numbers are kept. With ``drop_stopwords``, the
    function words in :data:`loomctx.text.stopwords.STOPWORDS` are removed. Of a text longer
    than :data:`~loomctx.text.sample.ANALYSIS_CHARS`, its :func:`~loomctx.text.sample.sample`
    is read: what one text costs every index, query and term count is bounded.
    """
    if len(text) <= _MEMO_MAX_CHARS:
        return list(_tokenize_memo(text, drop_stopwords))
    return _tokenize(sample(text), drop_stopwords)


def _term_set(text: str) -> frozenset[str]:
    return frozenset(tokenize(index_text(text), drop_stopwords=True))


TERM_MEMO_BYTES = 32 * 1024 * 1024
"""About the memory :func:`term_set`'s memo may hold: texts and their term sets (a term costs
about :data:`_TERM_BYTES` in a set of them)."""
_TERM_BYTES = 64
_term_memo = WeightMemo(_term_set, lambda text, terms: len(text) + _TERM_BYTES * len(terms),
                        limit=TERM_MEMO_BYTES)


def term_set(text: str) -> frozenset[str]:
    """The distinct search terms of a stored text (its decoration removed, stopwords dropped).

    Memoised within :data:`TERM_MEMO_BYTES` (:class:`~loomctx.text.memo.WeightMemo`): a
    session's candidates are scored again build after build, and a service scores new long
    texts for as long as it runs. A text over :data:`_TERMS_MEMO_MAX_CHARS` is read again each
    time (its bounded sample), so that no memo keeps a huge text alive after its session."""
    if len(text) > _TERMS_MEMO_MAX_CHARS:
        return _term_set(text)
    return _term_memo(text)


_TERMS_MEMO_MAX_CHARS = 16_384


def content_terms(text: str, k: int) -> list[str]:
    """The ``k`` most frequent non-stopword terms of ``text``, ties in order of first appearance.

    Single ASCII characters are skipped: they are noise in a rewritten query.
    """
    if k < 0:
        raise ConfigError(f"content_terms k must be >= 0, got {k!r}")
    counts = Counter(
        t for t in tokenize(text, drop_stopwords=True) if len(t) > 1 or t not in _ASCII_CHARS
    )
    return [term for term, _ in counts.most_common(k)]


def normalize_scores(x: np.ndarray) -> np.ndarray:
    """Divide by the maximum so the best is 1; zeros stay zero, and a max <= 0 gives all zeros."""
    arr = np.asarray(x, dtype=np.float32)
    top = float(arr.max()) if arr.size else 0.0
    if top <= 0.0 or not math.isfinite(top):
        return np.zeros_like(arr)
    return arr / np.float32(top)


BM25_K1 = 1.2
"""BM25's term-frequency saturation: the usual default."""
BM25_B = 0.75
"""BM25's document-length normalisation: the usual default."""


def bm25_idf(n: int, df: int) -> float:
    """The IDF of a term found in ``df`` of ``n`` documents: the non-negative Lucene form
    ``log(1 + (N - df + 0.5) / (df + 0.5))``.

    This, :func:`bm25_norm` and :func:`bm25_weight` are the one BM25 of the library. Two
    posting layouts use them: :class:`BM25Index` (arrays, append-only: the pipeline, session
    recall, knowledge bases and the evaluation's BM25 baseline) and
    :class:`~loomctx.stores.memory.InMemoryStore`'s keyed postings (records are replaced and
    deleted there, which the arrays do not support). The reranker's :func:`specificity` takes
    its IDF from here too.
    """
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def bm25_norm(length: Any, avgdl: float, k1: float = BM25_K1, b: float = BM25_B) -> Any:
    """The length part of BM25's denominator, ``k1 · (1 - b + b · dl / avgdl)``, written as
    ``k1 · (1 - b) + (k1 · b / avgdl) · dl`` so that an array of lengths costs one
    multiply-add. ``length`` is a number or a numpy array (the result is of its kind)."""
    return k1 * (1.0 - b) + (k1 * b / avgdl) * length


def bm25_weight(idf: Any, tf: Any, norm: Any, k1_plus_1: Any) -> Any:
    """A term's part of a document's BM25 score: ``idf · (k1 + 1) · tf / (tf + norm)``, with
    ``norm`` from :func:`bm25_norm`. The arithmetic keeps its operands' type: float32 arrays
    in :class:`BM25Index`, Python floats in the in-memory store."""
    return (idf * k1_plus_1) * tf / (tf + norm)


DENSE_SHARE = 0.125
"""A term found in more than this share of the documents is scored as one dense array: adding
it is a contiguous pass instead of a scatter over a posting that long."""


class BM25Index:
    """Okapi BM25 over an incremental inverted index (doc index = insertion order).

    IDF is :func:`bm25_idf`; each distinct query term counts once. Documents are tokenized with
    :func:`tokenize`, by default without stopwords (pass ``drop_stopwords=False`` to keep them).
    Safe to share between threads.
    """

    def __init__(self, k1: float = BM25_K1, b: float = BM25_B, *,
                 drop_stopwords: bool = True) -> None:
        if not (isinstance(k1, (int, float)) and math.isfinite(k1) and k1 >= 0):
            raise ConfigError(f"BM25 k1 must be a finite number >= 0, got {k1!r}; 1.2 is usual")
        if not (isinstance(b, (int, float)) and 0.0 <= b <= 1.0):
            raise ConfigError(f"BM25 b must be in [0, 1], got {b!r}; 0.75 is usual")
        self.k1 = float(k1)
        self.b = float(b)
        self.drop_stopwords = drop_stopwords
        self._lock = threading.Lock()
        self._lengths: list[int] = []
        self._pending: dict[str, tuple[list[int], list[int]]] = {}
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._norm: np.ndarray | None = None
        # Term → (doc ids, each one's BM25 weight), valid until the next add: a session's
        # searches repeat terms, and the weights cost more than adding them up.
        self._weights: dict[str, tuple[np.ndarray | None, np.ndarray]] = {}

    def __len__(self) -> int:
        return len(self._lengths)

    def add(self, docs: Sequence[str]) -> None:
        """Tokenize and index ``docs``; they get the next doc indexes in order."""
        drop = self.drop_stopwords
        self.add_tokens([tokenize(doc, drop_stopwords=drop) for doc in docs])

    def add_tokens(self, token_lists: Iterable[Sequence[str]]) -> None:
        """Index documents that are already tokenized (one list of terms per document)."""
        with self._lock:
            pending = self._pending
            lengths = self._lengths
            for tokens in token_lists:
                doc = len(lengths)
                lengths.append(len(tokens))
                for term, tf in Counter(tokens).items():
                    slot = pending.get(term)
                    if slot is None:
                        pending[term] = ([doc], [tf])
                    else:
                        slot[0].append(doc)
                        slot[1].append(tf)
            self._norm = None
            self._weights.clear()

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query`` (float32; 0 where no query term occurs)."""
        return self.scores_tokens(tokenize(query, drop_stopwords=self.drop_stopwords))

    def scores_tokens(self, terms: Iterable[str]) -> np.ndarray:
        """Like :meth:`scores` for an already tokenized query."""
        with self._lock:
            n = len(self._lengths)
            out = np.zeros(n, dtype=np.float32)
            if n == 0:
                return out
            for term in dict.fromkeys(terms):
                weighted = self._weighted(term, n)
                if weighted is None:
                    continue
                ids, weights = weighted
                if ids is None:  # a common term: one contiguous add beats a scatter
                    out += weights
                else:
                    out[ids] += weights
            return out

    def _weighted(self, term: str, n: int) -> tuple[np.ndarray | None, np.ndarray] | None:
        """The documents of ``term`` and its BM25 weight in each (kept until the next add); a
        term in more than ``DENSE_SHARE`` of the documents as one weight per document
        (None for the ids, 0 where it is absent)."""
        hit = self._weights.get(term)
        if hit is not None:
            return hit
        posting = self._posting(term)
        if posting is None:
            return None
        ids, tf = posting
        idf = np.float32(bm25_idf(n, ids.size))
        weights = bm25_weight(idf, tf, self._doc_norm()[ids], np.float32(self.k1 + 1.0))
        kept: tuple[np.ndarray | None, np.ndarray] = (ids, weights)
        if ids.size > DENSE_SHARE * n:
            dense = np.zeros(n, dtype=np.float32)
            dense[ids] = weights
            kept = (None, dense)
        self._weights[term] = kept
        return kept

    def search(
        self, query: str, limit: int = 20, *, mask: np.ndarray | None = None
    ) -> list[tuple[int, float]]:
        """The best ``limit`` (doc index, score) pairs with a positive score.

        Sorted by score descending, then doc index ascending. ``mask`` (a boolean array, one entry
        per document) keeps only the documents where it is true.
        """
        if limit < 0:
            raise ConfigError(f"search limit must be >= 0, got {limit!r}")
        scores = self.scores(query)
        if mask is not None:
            keep = np.asarray(mask, dtype=bool)
            if keep.shape != scores.shape:
                raise ConfigError(
                    f"search mask must have shape {scores.shape!r} (one entry per document), "
                    f"got {keep.shape!r}"
                )
            scores = np.where(keep, scores, np.float32(0.0))
        if limit == 0:
            return []
        n = scores.size
        if n > limit and np.count_nonzero(scores) > 2 * limit:
            # Most documents match (a common term): one partition of all scores finds the cut
            # before the matches are listed, instead of listing them all and partitioning those.
            kth = np.partition(scores, n - limit)[n - limit]
            cand = np.flatnonzero(scores >= kth) if kth > 0 else np.flatnonzero(scores > 0)
        else:
            cand = np.flatnonzero(scores > 0)
        if cand.size == 0:
            return []
        vals = scores[cand]
        if cand.size > limit:
            kth = np.partition(vals, cand.size - limit)[cand.size - limit]
            top = vals >= kth
            cand, vals = cand[top], vals[top]
        order = np.lexsort((cand, -vals))[:limit]
        return list(zip(cand[order].tolist(), vals[order].tolist(), strict=True))

    def _doc_norm(self) -> np.ndarray:
        """Per-document ``k1 * (1 - b + b * dl / avgdl)``, recomputed after adds."""
        norm = self._norm
        if norm is None:
            lengths = np.asarray(self._lengths, dtype=np.float32)
            avg = float(lengths.mean()) or 1.0
            norm = bm25_norm(lengths, avg, self.k1, self.b).astype(np.float32)
            self._norm = norm
        return norm

    def _posting(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """The compiled (doc ids, tf) arrays of ``term``, merging postings added since last use."""
        compiled = self._arrays.get(term)
        fresh = self._pending.pop(term, None)
        if fresh is None:
            return compiled
        ids = np.asarray(fresh[0], dtype=np.int64)
        tf = np.asarray(fresh[1], dtype=np.float32)
        if compiled is not None:
            ids = np.concatenate((compiled[0], ids))
            tf = np.concatenate((compiled[1], tf))
        self._arrays[term] = (ids, tf)
        return ids, tf


__all__ = ["BM25_B", "BM25_K1", "BM25Index", "bm25_idf", "bm25_norm", "bm25_weight",
           "content_terms", "normalize_scores",
           "tokenize"]
