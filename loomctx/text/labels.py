"""The label of a message or passage: the speaker of a transcript line, the title of a passage.

A transcript line names its speaker ("Caroline: I went to a support group"), a passage its title
("Kiss and Tell (1945 film): Kiss and Tell is a ..."). The reranker gives a small bonus to a
candidate whose label the question names; memory counts labels to tell speakers (labels of many
messages) from titles.
"""

from __future__ import annotations

import re
from functools import lru_cache

from loomctx.text.decoration import index_text
from loomctx.text.lexical import tokenize

_LABEL = re.compile(r"([^:\n]{1,60}):\s")
_ASIDE = re.compile(r"\([^)]*\)")
_LABEL_SCAN = 256  # decoration and a label of at most 60 characters fit; the cache keeps no more


def label_terms(text: str) -> frozenset[str]:
    """The content terms of a text's label: what comes before a leading colon, asides left out.

    An ``[id] (time)`` decoration before the label is skipped. Empty when the text has no such
    label (a colon not followed by a space, as in a URL, is not one).
    """
    return _label_terms(text[:_LABEL_SCAN])


@lru_cache(maxsize=1 << 14)
def _label_terms(text: str) -> frozenset[str]:
    match = _LABEL.match(index_text(text))
    if match is None:
        return frozenset()
    return frozenset(tokenize(_ASIDE.sub(" ", match.group(1)), drop_stopwords=True))


def without_terms(text: str, terms: frozenset[str] | set[str]) -> str:
    """``text`` without the capitalised words that carry any of ``terms`` ("Caroline's" for
    ``caroline``).

    Only a word written with a capital first letter goes: a name is written so in running text,
    while the same letters in lower case are a common word ("error" in a question, where
    ``Error:`` labels many tool messages). Words are split on white space and kept in order;
    the text is returned unchanged when no word goes, or when every word would.
    """
    if not terms:
        return text
    words = text.split()
    kept = [w for w in words
            if not w[:1].isupper() or terms.isdisjoint(tokenize(w, drop_stopwords=True))]
    return " ".join(kept) if kept and len(kept) < len(words) else text


__all__ = ["label_terms", "without_terms"]
