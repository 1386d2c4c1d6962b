"""The :class:`TokenCounter` contract: how loomctx measures text.

Every budget decision is made in the target model's tokens. A counter is either *exact* (the
model's own tokenizer, e.g. cl100k_base) or an *estimator* (a calibrated upper-bound guess for
models with no public tokenizer). The chat-format overhead (per-message framing, reply priming,
tool schemas) is not the counter's business: :mod:`loomctx.tokens.chat` adds it on top.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable


@runtime_checkable
class TokenCounter(Protocol):
    """Counts and cuts text in one model's tokens.

    Contract:
    - ``count(text)`` is the number of tokens the model sees for ``text`` (special-token strings
      are counted as ordinary text, never as control tokens). Exact counters return exactly that;
      estimators return a number that is >= the true count for typical text (safety margin).
    - ``count_many(texts)`` equals ``[count(t) for t in texts]``, only faster.
    - ``truncate(text, max_tokens)`` returns a prefix of ``text`` with ``count(prefix) <=
      max_tokens``, as long as possible, cut at a token boundary (never in a UTF-8 sequence).
    - Deterministic; thread-safe; no network.
    """

    name: str
    """Encoding or estimator name, e.g. ``"cl100k_base"``, ``"estimate:claude"``."""
    exact: bool
    """True when counts are the model's real token counts."""

    def count(self, text: str) -> int: ...

    def count_many(self, texts: Sequence[str]) -> list[int]: ...

    def truncate(self, text: str, max_tokens: int) -> str: ...


__all__ = ["TokenCounter"]
