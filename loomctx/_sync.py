"""Running the async core from synchronous code (the ``*_sync`` twins).

One event loop per thread, reused across calls: ``asyncio.run`` would create and tear down a loop
on every build, which costs more than a warm build itself.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from loomctx.errors import ConfigError

T = TypeVar("T")
_local = threading.local()


def run_sync(coro: Coroutine[Any, Any, T], *, name: str) -> T:
    """Run ``coro`` to completion on this thread's private loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        coro.close()
        raise ConfigError(f"{name}_sync() was called inside a running event loop: "
                          f"use 'await ...{name}(...)' there")
    loop = getattr(_local, "loop", None)
    if loop is None or loop.is_closed():
        loop = _local.loop = asyncio.new_event_loop()
    return loop.run_until_complete(coro)
