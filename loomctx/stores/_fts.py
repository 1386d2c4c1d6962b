"""Free text to safe SQLite FTS5 MATCH expressions.

A user query is never handed to FTS5 as syntax (``AND``, ``NEAR``, ``*``, ``:`` and unbalanced
quotes would be operators or errors). Each term is wrapped in double quotes — inside which FTS5
reads only a string, with ``"`` written as ``""`` — and terms are joined with ``OR`` so that a
record matching any term is a candidate and bm25() decides the order.

Two indexes answer one query, because the ``trigram`` tokenizer cannot see terms shorter than
three characters (most Chinese words are two):

- the *terms* index (unicode61 over :func:`~loomctx.stores._text.tokenize` output: words, CJK
  characters and CJK bigrams) gets every query token
  (:func:`~loomctx.stores._text.query_tokens`), short ones included;
- the *trigram* index (substrings of the raw text) gets each written word or CJK run of three or
  more characters as a phrase, which rewards exact phrases and finds words inside longer words
  (``embed`` in ``embeddings``).
"""

from __future__ import annotations

from dataclasses import dataclass

from loomctx.stores._text import query_tokens, words

MAX_TERMS = 64
"""Query terms kept per index; longer queries are cut (bm25 over 64 ORed terms is plenty)."""

TRIGRAM_MIN = 3
"""The trigram tokenizer matches nothing for a term shorter than this."""


def quote(term: str) -> str:
    """One FTS5 string literal: the term in double quotes, inner quotes doubled."""
    return '"' + term.replace('"', '""') + '"'


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))[:MAX_TERMS]


@dataclass(frozen=True, kw_only=True)
class FtsQuery:
    """The MATCH expressions for one free-text query (None: nothing to ask that index)."""

    terms: str | None
    """Expression for the unicode61 index of tokenized text."""
    trigram: str | None
    """Expression for the trigram index of raw text."""


def build_query(text: str) -> FtsQuery:
    """Turn free text into quoted, ORed MATCH expressions for both indexes."""
    tokens = _unique(query_tokens(text))
    phrases = _unique([w.casefold() for w in words(text) if len(w) >= TRIGRAM_MIN])
    return FtsQuery(
        terms=" OR ".join(quote(t) for t in tokens) or None,
        trigram=" OR ".join(quote(p) for p in phrases) or None,
    )


__all__ = ["MAX_TERMS", "TRIGRAM_MIN", "FtsQuery", "build_query", "quote"]
