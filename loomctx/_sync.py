"""Running the async core from synchronous code (the ``*_sync`` twins), and making an async
method called without ``await`` loud instead of silent (:func:`strict_async`).

One event loop per thread, reused across calls: ``asyncio.run`` would create and tear down a loop
on every build, which costs more than a warm build itself.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
import warnings
import weakref
from collections.abc import Callable, Coroutine, Generator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar, cast

from loomctx.errors import ConfigError

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


# -- an async method called without ``await`` -------------------------------------------------
#
# Sync code that calls ``session.add_messages(...)`` as it did before the method became async
# gets a coroutine that never runs: nothing is stored, and every later build is silently empty.
# :func:`strict_async` makes that loud. The coroutine an async method returns reports being
# dropped unawaited (garbage-collected without ever being started, closed or thrown into), and
# the object's next guarded call raises a ConfigError naming the dropped call and the fix.

_DROPPED: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
_DROPPED_LOCK = threading.Lock()


class _Call(Coroutine[Any, Any, T]):
    """The coroutine of one call of a :func:`strict_async` method; says so when dropped."""

    __slots__ = ("__weakref__", "_coro", "_driven", "_name", "_owner")

    def __init__(self, coro: Coroutine[Any, Any, T], owner: Any, name: str) -> None:
        self._coro = coro
        self._owner = weakref.ref(owner)
        self._name = name
        self._driven = False

    def __await__(self) -> Generator[Any, None, T]:
        self._driven = True
        return self._coro.__await__()

    def send(self, value: Any) -> Any:
        self._driven = True
        return self._coro.send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        self._driven = True
        if val is None and tb is None:
            return self._coro.throw(typ)
        return self._coro.throw(typ, val, tb)  # pragma: no cover - the legacy signature

    def close(self) -> None:
        self._driven = True
        self._coro.close()

    def __repr__(self) -> str:
        return f"<coroutine {self._name}>"

    def __del__(self) -> None:
        if self._driven:
            return
        self._coro.close()  # it never started: closing it runs nothing
        owner = self._owner()
        if owner is not None:
            with _DROPPED_LOCK:
                _DROPPED.setdefault(owner, self._name)
        warnings.warn(f"coroutine {self._name!r} was never awaited, so it never ran and did "
                      f"nothing: {_fix(self._name)}", RuntimeWarning, stacklevel=2)


def _fix(qualname: str) -> str:
    """How to call ``Class.method`` right, e.g. ``Session.add_messages``."""
    cls, _, method = qualname.rpartition(".")
    obj = cls.rsplit(".", 1)[-1].lower() or "obj"
    return (f"write `await {obj}.{method}(...)` in async code, or call "
            f"`{obj}.{method}_sync(...)` from sync code")


def check_not_dropped(owner: Any) -> None:
    """Raise ConfigError if a call of ``owner``'s async methods was dropped without ``await``
    since the last check (once: the caller can fix the call and carry on)."""
    with _DROPPED_LOCK:
        name = _DROPPED.pop(owner, None)
    if name is not None:
        raise ConfigError(f"{name}(...) was called without await, so it never ran and did "
                          f"nothing: {_fix(name)}")


F = TypeVar("F", bound=Callable[..., Any])


def strict_async(method: F) -> F:
    """Make misuse of an async method, or of its sync twin after such misuse, loud.

    On an ``async def`` method: the call returns a coroutine that, when dropped without being
    awaited, warns and marks its object; on any method: the call first raises
    :class:`~loomctx.errors.ConfigError` if the object has such a dropped call (once, so the
    caller can carry on after fixing it). The coroutine is otherwise the method's own:
    ``await``, ``asyncio.run``, tasks and ``gather`` all take it.
    """
    if inspect.iscoroutinefunction(method):
        @functools.wraps(method)
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            check_not_dropped(self)
            return _Call(method(self, *args, **kwargs), self, method.__qualname__)

        mark = getattr(inspect, "markcoroutinefunction", None)  # Python 3.12+
        if mark is not None:  # pragma: no cover - depends on the Python version
            call = mark(call)
    else:
        @functools.wraps(method)
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            check_not_dropped(self)
            return method(self, *args, **kwargs)
    return cast(F, call)
