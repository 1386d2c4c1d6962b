"""Test helpers that ship with loomctx so users can test their agents offline.

- :class:`HashingEmbedder`: a deterministic, fast fake embedder (no model).
- :class:`WordCounter`: a fixed tokenizer (one token per whitespace-separated word) for tests
  whose numbers must be computable by hand.
- ``loomctx.testing.store_conformance``: the contract suite every ``MemoryStore`` passes (needs
  pytest and hypothesis, so it is not imported here).
"""

from __future__ import annotations

from collections.abc import Sequence

from loomctx.embed.fake import HashingEmbedder


class WordCounter:
    """One token per whitespace-separated word; exact by definition."""

    name = "words"
    exact = True

    def count(self, text: str) -> int:
        return len(text.split())

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [self.count(t) for t in texts]

    def truncate(self, text: str, max_tokens: int) -> str:
        if max_tokens <= 0:
            return ""
        words = 0
        in_word = False
        for i, ch in enumerate(text):
            if ch.isspace():
                in_word = False
            elif not in_word:
                in_word = True
                words += 1
                if words > max_tokens:
                    return text[:i].rstrip()
        return text


__all__ = ["HashingEmbedder", "WordCounter"]
