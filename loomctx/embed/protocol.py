"""The :class:`Embedder` contract: text to vectors, offline."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, cast, runtime_checkable

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
    - Optionally ``store_vectors = False``: its vectors are not worth keeping in a store's
      embedding cache (it computes one faster than a store returns it: a round trip a turn
      for nothing); a session then memoises its vectors in process only.
    """

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def embed_later(embedder: Embedder, texts: Sequence[str]) -> Callable[[], np.ndarray]:
    """``embedder.embed(texts)`` in two steps: the first now, the rest when the returned function
    is called (on any thread).

    An embedder may offer ``embed_later(texts)`` (an optional part of the contract): it does its
    Python work (checks, tokenising, look-ups) in the call and returns a function that runs the
    model, returning what ``embed`` would. Any other embedder does all of it in the function.
    A caller that runs the model on a worker thread does the first step on its own, so the two
    threads do not take turns at Python's lock over it.
    """
    later = getattr(embedder, "embed_later", None)
    if later is not None:
        return cast("Callable[[], np.ndarray]", later(texts))
    batch = list(texts)
    return lambda: embedder.embed(batch)


__all__ = ["Embedder", "embed_later"]
