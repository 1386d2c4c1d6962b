"""Cap the BLAS threads of numpy's bundled OpenBLAS around a forward pass (no extra package).

OpenBLAS starts one thread per core and spins them on every matrix product. On a machine whose
cores are busy with other work that spinning costs more than it saves: on 2 shared cores one
thread embedded a conversation more than twice as fast as the default threads
(``benchmarks/HISTORY.md``). ``threadpoolctl`` does this generally; it is not a dependency, so this
module finds the OpenBLAS that numpy loaded and calls its own ``set_num_threads``. Where there is
no such library (another BLAS, another platform) it does nothing.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_PREFIXES = ("scipy_openblas", "openblas")
_SUFFIXES = ("64_", "")
_FOUND: list[tuple[Any, Any] | None] = []
_LOCK = threading.Lock()


def _openblas() -> tuple[Any, Any] | None:
    """(get, set) thread functions of the loaded OpenBLAS, or None (looked up once)."""
    with _LOCK:
        if _FOUND:
            return _FOUND[0]
        found = None
        try:
            import numpy  # noqa: F401  (loads its BLAS)

            with open("/proc/self/maps", encoding="utf-8") as fh:
                paths = sorted({line.split()[-1] for line in fh
                                if "openblas" in line.lower() and ".so" in line})
        except OSError:
            paths = []
        for path in paths:
            try:
                # PyDLL: a call keeps the interpreter lock. Both calls take microseconds, and a
                # worker thread that gave the lock up around each would wait for it again, up
                # to the switch interval (5 ms) while the build's thread runs Python.
                lib = ctypes.PyDLL(path)
            except OSError:
                continue
            for prefix in _PREFIXES:
                for suffix in _SUFFIXES:
                    get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                    put = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                    if get is not None and put is not None:
                        get.restype = ctypes.c_int
                        put.argtypes = [ctypes.c_int]
                        found = (get, put)
                        break
                if found:
                    break
            if found:
                break
        _FOUND.append(found)
        return found


def blas_threads() -> int | None:
    """The current OpenBLAS thread count (None when no OpenBLAS was found)."""
    funcs = _openblas()
    return None if funcs is None else int(funcs[0]())


_IN_FORCE: list[int] = []
"""The caps of the blocks running now, in every thread (under ``_CAPS``)."""
_SAVED: list[int] = [0]
"""The thread count before the first of them."""
_CAPS = threading.Lock()


@contextmanager
def limited(threads: int | None) -> Iterator[None]:
    """Run the block with at most ``threads`` BLAS threads (None: leave BLAS alone).

    The count is process-wide, and blocks of two threads overlap (a build's dense search on a
    worker, its lexical candidates' cosines on the caller): the smallest cap in force holds
    until the last block ends. Restored by whichever block ended first, the count would change
    under the other block's product, and OpenBLAS splits a product differently by its thread
    count, so the same product would round differently from build to build."""
    funcs = None if threads is None else _openblas()
    if funcs is None:
        yield
        return
    get, put = funcs
    with _CAPS:
        if not _IN_FORCE:
            _SAVED[0] = int(get())
        _IN_FORCE.append(threads)  # type: ignore[arg-type]
        _apply(put)
    try:
        yield
    finally:
        with _CAPS:
            _IN_FORCE.remove(threads)  # type: ignore[arg-type]
            _apply(put)


def _apply(put: Any) -> None:
    """Set the count the blocks in force allow (the saved count when none is)."""
    saved = _SAVED[0]
    put(min(saved, *_IN_FORCE) if _IN_FORCE else saved)


__all__ = ["blas_threads", "limited"]
