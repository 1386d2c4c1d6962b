"""Running the async core from synchronous code (the ``*_sync`` twins).

One event loop per thread, reused across calls: ``asyncio.run`` would create and tear down a loop
on every build, which costs more than a warm build itself.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
_local = threading.local()


def run_sync(coro: Coroutine[Any, Any, T], *, name: str) -> T:
    """Run ``coro`` to completion on this thread's private loop.

    Inside a running event loop (a sync call from async code, or a notebook) the coroutine runs
    on a worker thread's private loop instead, and this call blocks until it is done.
    """
    try:
        asyncio.get_running_loop()
        running = True
    except RuntimeError:
        running = False
    if not running:
        return _run_here(coro)
    return _bridge().submit(_run_here, coro).result()


def _run_here(coro: Coroutine[Any, Any, T]) -> T:
    loop = getattr(_local, "loop", None)
    if loop is None or loop.is_closed():
        loop = _local.loop = asyncio.new_event_loop()
    return loop.run_until_complete(coro)


_BRIDGE: ThreadPoolExecutor | None = None
_BRIDGE_LOCK = threading.Lock()


def _bridge() -> ThreadPoolExecutor:
    global _BRIDGE
    with _BRIDGE_LOCK:
        if _BRIDGE is None:
            _BRIDGE = ThreadPoolExecutor(max_workers=4, thread_name_prefix="loomctx-sync")
        return _BRIDGE
