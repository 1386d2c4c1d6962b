"""What the model embedders share: argument checks, the BLAS cap, unit rows.

A subclass names its model (``name``, ``dim``) and fills the output rows in :meth:`_fill`; the
base checks the arguments once with one wording, runs the forward pass under the embedder's lock
with BLAS capped to ``threads``, and returns unit rows.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np

from loomctx._blas import limited
from loomctx.errors import ConfigError


class ModelEmbedder:
    """Base of the offline model embedders (USE, MiniLM)."""

    name: str
    dim: int

    def __init__(self, threads: int | None = 1) -> None:
        if threads is not None and (
            isinstance(threads, bool) or not isinstance(threads, int) or threads < 1
        ):
            raise ConfigError(
                f"{type(self).__name__} threads must be a positive int or None, got {threads!r}"
            )
        self.threads = threads
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``; rows are float32, L2-normalised, in input order."""
        batch = _strings(texts)
        out = np.empty((len(batch), self.dim), dtype=np.float32)
        if not batch:
            return out
        with self._lock, limited(self.threads):
            self._fill(batch, out)
        return unit_rows(out)

    def embed_later(self, texts: Sequence[str]) -> Callable[[], np.ndarray]:
        """:meth:`embed` in two steps: the arguments are checked now, and so is the model's
        Python work (tokenising, look-ups) when :meth:`_prepare` does it; the returned function
        runs the rest (the forward pass), on any thread, and returns what :meth:`embed` would.

        Why: two models embedding one question on two threads take turns at Python's lock
        while each prepares its input; the one that prepares first starts its forward pass
        (which leaves the lock free) sooner.
        """
        batch = _strings(texts)
        with self._lock:
            forward = self._prepare(batch) if batch else None
        if forward is None:
            return lambda: self.embed(batch)
        ready = forward

        def rest() -> np.ndarray:
            with self._lock, limited(self.threads):
                out = np.asarray(ready(), dtype=np.float32)
            return unit_rows(out)

        return rest

    def _prepare(self, batch: list[str]) -> Callable[[], np.ndarray] | None:
        """The forward pass over ``batch`` with its input work done now, or None to leave all
        of it for later (the default)."""
        return None

    def _fill(self, batch: list[str], out: np.ndarray) -> None:
        """Write the model's vector of ``batch[i]`` into ``out[i]`` (any length)."""
        raise NotImplementedError


def _strings(texts: Sequence[str]) -> list[str]:
    """``texts`` as a list, every item checked to be a string."""
    batch = list(texts)
    for i, text in enumerate(batch):
        if not isinstance(text, str):
            raise ConfigError(f"embed() takes strings, got {type(text).__name__} at index {i}")
    return batch


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Normalise rows in place; zero or non-finite rows become the first basis vector."""
    norms = np.linalg.norm(x, axis=1)
    bad = ~np.isfinite(norms) | (norms <= 0.0)
    if bad.any():
        x[bad] = 0.0
        x[bad, 0] = 1.0
        norms[bad] = 1.0
    x /= norms[:, None]
    return x


__all__ = ["ModelEmbedder", "unit_rows"]
