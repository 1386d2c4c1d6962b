"""A deterministic, offline, dependency-free embedder for tests and for machines without a model.

It hashes the text's :func:`~loomctx.text.lexical.tokenize` terms and its character trigrams
into ``dim`` signed buckets (the "hashing trick"), so texts that share words or spellings get a
high cosine, and the same text always gets the same vector on every machine (crc32, not Python's
salted ``hash``). It knows nothing of meaning: a paraphrase without shared words is not close.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from loomctx.errors import ConfigError
from loomctx.text.lexical import tokenize

_TERM_WEIGHT = 1.0
_TRIGRAM_WEIGHT = 0.5


@lru_cache(maxsize=1 << 17)
def _feature_hash(feature: str) -> int:
    return zlib.crc32(feature.encode("utf-8", "surrogatepass"))


class HashingEmbedder:
    """Signed feature hashing of words (weight 1) and character trigrams (weight 0.5).

    Every row is L2-normalised; a text with no features (empty, or only spaces) maps to the first
    basis vector, so every row is unit length.
    """

    store_vectors = False
    """Hashing a text is quicker than a store's look-up: not kept in a store's cache."""

    def __init__(self, dim: int = 256) -> None:
        if not isinstance(dim, int) or isinstance(dim, bool) or dim < 2:
            raise ConfigError(f"HashingEmbedder dim must be an int >= 2, got {dim!r}; 256 is usual")
        self.dim = dim
        self.name = f"hashing-{dim}@1"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One unit float32 row per text, in input order."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row] = self._vector(text)
        return out

    def _vector(self, text: str) -> np.ndarray:
        terms = tokenize(text)
        folded = " ".join(text.lower().split())
        grams = [folded[i : i + 3] for i in range(len(folded) - 2)] if len(folded) >= 3 else []
        if folded and not grams:
            grams = [folded]
        n_terms = len(terms)
        hashes = np.fromiter(
            map(_feature_hash, ["w:" + t for t in terms] + ["c:" + g for g in grams]),
            dtype=np.uint32,
            count=n_terms + len(grams),
        )
        if hashes.size == 0:
            vec = np.zeros(self.dim, dtype=np.float32)
            vec[0] = 1.0
            return vec
        weights = np.full(hashes.size, _TRIGRAM_WEIGHT)
        weights[:n_terms] = _TERM_WEIGHT
        signs = np.where(hashes >> np.uint32(31), -1.0, 1.0)
        vec = np.bincount(hashes % self.dim, weights=weights * signs,
                          minlength=self.dim).astype(np.float32)
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:
            vec = np.zeros(self.dim, dtype=np.float32)
            vec[0] = 1.0
            norm = 1.0
        return (vec / norm).astype(np.float32)


__all__ = ["HashingEmbedder"]
