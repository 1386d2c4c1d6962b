"""The BLAS thread cap around the default embedder's forward pass."""

from __future__ import annotations

from loomctx._blas import blas_threads, limited
from loomctx.embed.use import UniversalSentenceEncoder


def test_limited_caps_and_restores() -> None:
    before = blas_threads()
    with limited(1):
        inside = blas_threads()
    assert blas_threads() == before
    assert inside == (None if before is None else 1)
    with limited(None):  # None leaves BLAS alone
        assert blas_threads() == before


def test_limited_restores_after_an_error() -> None:
    before = blas_threads()
    try:
        with limited(1):
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert blas_threads() == before


def test_the_default_embedder_runs_on_one_blas_thread() -> None:
    assert UniversalSentenceEncoder().threads == 1
    assert UniversalSentenceEncoder(threads=None).threads is None
