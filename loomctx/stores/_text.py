"""The one place where stores get their search tokenizer.

Both the in-memory BM25 index and the SQLite terms index call :func:`tokenize`, on stored text and
on queries alike. It is the project's word tokenizer (:func:`loomctx.text.lexical.tokenize`:
English words, Chinese words segmented by a dictionary) plus every CJK character and CJK bigram.
The n-grams are there because dictionary segmentation alone misses a word glued into a longer
one: "我喜欢吃饺子" segments as ``吃饺子``, so the query "饺子" would find nothing; with the
bigram ``饺子`` it does.

A persistent store records :func:`tokenizer_id` with its index and re-indexes when it changes, so
an upgraded tokenizer never leaves a file answering from a stale index.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

from loomctx.text.lexical import tokenize as _word_tokenize
from loomctx.text.sample import sample

_CJK_RUN = re.compile(
    "[\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\U00020000-\U0002ebef]+"  # CJK extensions B-F
)
_WORD_RE = re.compile(r"[^\W_]+")
_PROBE = "Weekends: 我喜欢在周末去爬山, we're running 3.14 tests; カタカナ 한국어 café"


def cjk_grams(text: str, *, unigrams: bool = True) -> list[str]:
    """Every CJK character (unless ``unigrams`` is False) and every adjacent CJK pair.

    A run of one character always yields that character, so it stays searchable.
    """
    grams: list[str] = []
    for run in _CJK_RUN.findall(text):
        if unigrams or len(run) == 1:
            grams.extend(run)
        grams.extend(run[i : i + 2] for i in range(len(run) - 1))
    return grams


def tokenize(text: str) -> list[str]:
    """Index tokens of stored text: the project's word tokens, then CJK characters and bigrams
    (of a very long text, of its bounded :func:`~loomctx.text.sample.sample`)."""
    text = sample(text)
    return _word_tokenize(text) + cjk_grams(text)


def query_tokens(text: str) -> list[str]:
    """Tokens of a query: like :func:`tokenize` but without the single characters of longer CJK
    runs, which would match most Chinese records and only add noise to the ranking."""
    text = sample(text)
    return _word_tokenize(text) + cjk_grams(text, unigrams=False)


def words(text: str) -> list[str]:
    """Runs of letters and digits as written (no CJK splitting): the phrases of a query."""
    return _WORD_RE.findall(text)


@lru_cache(maxsize=1)
def tokenizer_id() -> str:
    """Names the tokenizer's behaviour: a digest of how it splits a fixed mixed-script probe."""
    digest = hashlib.sha1("\x1f".join(tokenize(_PROBE)).encode("utf-8")).hexdigest()[:16]
    return f"lexical+cjk-grams/{digest}"


__all__ = ["cjk_grams", "query_tokens", "tokenize", "tokenizer_id", "words"]
