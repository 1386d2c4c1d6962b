"""Exact token counts for BPE encodings bundled with ``quicktok``.

``quicktok`` is a compiled, tiktoken-compatible BPE tokenizer that ships its vocabularies, so
counting works offline right after install. It bundles the OpenAI encodings (``cl100k_base``,
``o200k_base``, ``o200k_harmony``) and the open-weight ``llama3`` and ``qwen3`` vocabularies.

Special-token strings such as ``"<|endoftext|>"`` are counted as ordinary text (tiktoken's
``encode_ordinary``): a user message that happens to contain one is text to the model too.
Lone surrogates are counted as U+FFFD (see :mod:`loomctx.tokens._text`).
"""

from __future__ import annotations

from collections.abc import Sequence

import quicktok

from loomctx.errors import ConfigError
from loomctx.tokens._text import clean_surrogates, refine_prefix

BUNDLED_ENCODINGS: tuple[str, ...] = (
    "cl100k_base",
    "llama3",
    "o200k_base",
    "o200k_harmony",
    "qwen3",
)
"""Encodings that ship inside quicktok (no download, no file)."""


class BPECounter:
    """Exact counter for one quicktok encoding, e.g. ``BPECounter("o200k_base")``."""

    exact: bool = True

    def __init__(self, encoding: str) -> None:
        if encoding not in BUNDLED_ENCODINGS:
            raise ConfigError(
                f"unknown BPE encoding {encoding!r}: use one of {', '.join(BUNDLED_ENCODINGS)}, "
                "or HFTokenizerCounter.from_file() for a tokenizer.json"
            )
        self.name: str = encoding
        self._enc = quicktok.get_encoding(encoding)

    def __repr__(self) -> str:
        return f"BPECounter({self.name!r})"

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``, special-token strings treated as text."""
        return self._enc.encode_ordinary(clean_surrogates(text))

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids``; a partial UTF-8 sequence decodes to U+FFFD."""
        return self._enc.decode(list(ids))

    def count(self, text: str) -> int:
        """Exact number of tokens in ``text``."""
        return self._enc.count(clean_surrogates(text))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Exact counts of many texts in one batched (multi-threaded) call."""
        if not texts:
            return []
        counts = quicktok.count_batch(self._enc, [clean_surrogates(t) for t in texts])
        return [int(c) for c in counts]

    def truncate(self, text: str, max_tokens: int) -> str:
        """Longest prefix of ``text`` with at most ``max_tokens`` tokens.

        The first ``max_tokens`` ids are decoded to bytes; a trailing partial UTF-8 character is
        dropped, so the result is always a prefix of ``text``. The prefix is then re-counted and
        backed off (or extended by a character) until it is the longest that fits.
        """
        if max_tokens < 0:
            raise ConfigError(f"max_tokens must be >= 0, got {max_tokens!r}")
        clean = clean_surrogates(text)
        ids = self._enc.encode_ordinary(clean)
        if len(ids) <= max_tokens:
            return text
        head = self._enc.decode_bytes(ids[:max_tokens])
        guess = len(head.decode("utf-8", errors="ignore"))
        cut = refine_prefix(clean, self._enc.count, max_tokens, guess)
        return text[: len(cut)]


__all__ = ["BUNDLED_ENCODINGS", "BPECounter"]
