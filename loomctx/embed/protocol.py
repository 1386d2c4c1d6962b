"""The :class:`Embedder` contract: text to vectors, offline."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors.

    Contract:
    - ``embed(texts)`` returns an array of shape ``(len(texts), dim)``, dtype float32, each row
      L2-normalised (so a dot product is the cosine), in input order; ``embed([])`` has shape
      ``(0, dim)``.
    - Deterministic for the same text; no network at run time.
    - ``name`` identifies the model and version (the embedding cache key).
    """

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


__all__ = ["Embedder"]
