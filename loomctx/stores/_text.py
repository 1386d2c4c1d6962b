"""The one place where stores get their word tokenizer.

Both the in-memory BM25 index and the SQLite term index call :func:`tokenize`; swapping the
tokenizer means changing the import below and ``TOKENIZER_ID``. A persistent store records the id
it indexed with and re-indexes when the id changes, so old files never answer with a stale index.

The private fallback is CJK-aware without a dictionary: Latin (and other spaced-script) words are
case-folded whole; every CJK character and every adjacent CJK pair becomes a token, so the two
characters of "爬山" are found inside "我喜欢在周末去爬山" without word segmentation.
"""

from __future__ import annotations

import re

_CJK = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\U00020000-\U0002ebef"  # CJK extensions B-F
)
_TOKEN_RE = re.compile(rf"([{_CJK}]+)|([^\W_{_CJK}]+)")

TOKENIZER_ID = "loomctx.stores.cjk-bigram/1"
"""Names the tokenizer below; a persistent index built with another id is rebuilt on open."""


def tokenize(text: str) -> list[str]:
    """Split ``text`` into search tokens: folded words, CJK characters and CJK bigrams."""
    tokens: list[str] = []
    for match in _TOKEN_RE.finditer(text):
        run, word = match.group(1), match.group(2)
        if word is not None:
            tokens.append(word.casefold())
            continue
        for i, char in enumerate(run):
            tokens.append(char)
            if i + 1 < len(run):
                tokens.append(run[i : i + 2])
    return tokens


_WORD_RE = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    """Runs of letters and digits as written (no CJK splitting): the phrases of a query."""
    return _WORD_RE.findall(text)


__all__ = ["TOKENIZER_ID", "tokenize", "words"]
