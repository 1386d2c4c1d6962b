"""QueryRewriter (no LLM): append the top-K content words of the last N messages to the query.

A follow-up like "and what about the second one?" carries none of the words that retrieval
needs; the recent turns do. Defaults: N = 5 messages, K = 6 words (enough to name a topic, few
enough not to drown the question); zh + en stopwords removed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from loomctx.errors import ConfigError
from loomctx.text.lexical import content_terms, tokenize


@dataclass(frozen=True, kw_only=True)
class QueryRewriter:
    """Expands a query with frequent terms of the recent conversation."""

    last_n: int = 5
    """How many recent messages to read."""
    top_k: int = 6
    """How many terms to append."""

    def __post_init__(self) -> None:
        if self.last_n < 0 or self.top_k < 0:
            raise ConfigError(f"last_n and top_k must be >= 0, got {self.last_n!r}, "
                              f"{self.top_k!r}")

    def rewrite(self, query: str, recent: Sequence[str]) -> str:
        if not self.last_n or not self.top_k or not recent:
            return query
        have = set(tokenize(query, drop_stopwords=True))
        extra = [t for t in content_terms("\n".join(recent[-self.last_n:]), self.top_k + len(have))
                 if t not in have][: self.top_k]
        return f"{query} {' '.join(extra)}".strip() if extra else query


__all__ = ["QueryRewriter"]
