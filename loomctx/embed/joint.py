"""Two embedders as one: a multilingual model everywhere, an English one where the text is English.

Each text's vector is the concatenation ``[sqrt(w) * a, sqrt(1 - w) * b]`` of the two models'
unit vectors, so the dot product of two such vectors is ``w * cos_a + (1 - w) * cos_b``: one
vector, one index, one cosine, and every store and cache works unchanged. A text the English model
cannot read (a language check: most of its letters outside the Latin script) gets ``[a, 0]``
instead, so Chinese matched against Chinese keeps the multilingual model's whole cosine, and an
English question matched against a Chinese memory gets ``sqrt(w) * cos_a``. Both parts are
unit-length, so every row is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from loomctx.embed.protocol import Embedder
from loomctx.errors import ConfigError

_LATIN_SHARE = 0.5


def latin_share(text: str) -> float:
    """The share of ``text``'s letters in the Latin script (1.0 for a text with no letters)."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return 1.0
    latin = sum(1 for c in letters if c < "\u0250")
    return latin / len(letters)


class JointEmbedder:
    """``multilingual`` everywhere, joined by ``english`` on texts mostly in the Latin script.

    ``weight`` is the multilingual model's share of the cosine between two Latin-script texts
    (0 < weight < 1).
    """

    def __init__(self, multilingual: Embedder, english: Embedder, *, weight: float = 0.5) -> None:
        if not isinstance(weight, (int, float)) or not 0.0 < float(weight) < 1.0:
            raise ConfigError(f"JointEmbedder weight must be between 0 and 1, got {weight!r}")
        self.multilingual = multilingual
        self.english = english
        self.weight = float(weight)
        self.name = f"joint({multilingual.name}+{english.name}@{self.weight:g})"
        self.dim = multilingual.dim + english.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``: float32 unit rows of ``multilingual.dim + english.dim``."""
        batch = list(texts)
        out = np.zeros((len(batch), self.dim), dtype=np.float32)
        if not batch:
            return out
        first = self.multilingual.dim
        out[:, :first] = self.multilingual.embed(batch)
        english = [i for i, text in enumerate(batch) if latin_share(text) >= _LATIN_SHARE]
        if english:
            out[english, :first] *= math.sqrt(self.weight)
            out[english, first:] = self.english.embed([batch[i] for i in english])
            out[english, first:] *= math.sqrt(1.0 - self.weight)
        return out


__all__ = ["JointEmbedder", "latin_share"]
