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


def test_overlapping_blocks_of_two_threads_keep_the_cap_until_the_last_ends() -> None:
    """A worker's block that ends first must not lift the cap under the caller's block: the
    same product would be split, and rounded, differently."""
    import threading

    before = blas_threads()
    assert before is not None and before > 1, "numpy's OpenBLAS, on a machine of 2+ cores"
    entered, leave, seen = threading.Event(), threading.Event(), []

    def worker() -> None:
        with limited(1):
            entered.set()
            leave.wait(5)

    t = threading.Thread(target=worker)
    t.start()
    entered.wait(5)
    with limited(1):
        leave.set()
        t.join(5)  # the worker's block ended inside this one
        seen.append(blas_threads())
    assert seen == [1]
    assert blas_threads() == before
    with limited(2 * before):  # a cap above the count leaves it
        assert blas_threads() == before
