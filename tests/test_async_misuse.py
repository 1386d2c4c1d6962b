"""An async Session method called without ``await`` is loud, never a silent no-op.

``Session.add_messages`` became async; sync code that still calls it the old way gets a
coroutine that never runs. Without a guard nothing is stored and every later build is quietly
missing those messages. Now the dropped call warns, and the session's next call raises a
ConfigError that names the dropped call and the fix; every proper use stays silent.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import warnings

import pytest

from loomctx import ConfigError, HashingEmbedder, Session


def _session() -> Session:
    return Session(embedder=HashingEmbedder(), system_prompt="Be brief.")


def _contents(s: Session) -> list[str]:
    return [str(m["content"]) for m in s.build_sync(max_tokens=500).payload["messages"]]


def test_sync_code_calling_add_messages_without_await_gets_an_error() -> None:
    s = _session()
    with pytest.warns(RuntimeWarning, match="'Session.add_messages' was never awaited"):
        s.add_messages([{"role": "user", "content": "The gate code is 4711."}])
        gc.collect()
    with pytest.raises(ConfigError, match=r"Session\.add_messages\(\.\.\.\) was called without "
                                          r"await.*session\.add_messages_sync\(\.\.\.\)"):
        s.build_sync(max_tokens=500)
    # Said once: the caller fixes the call and the session carries on.
    s.add_messages_sync([{"role": "user", "content": "The gate code is 4711."}])
    assert "The gate code is 4711." in _contents(s)


@pytest.mark.parametrize("then", ["add_message_sync", "add_messages_sync", "build_sync",
                                  "end_sync"])
def test_every_next_call_reports_the_dropped_one(then: str) -> None:
    s = _session()
    s.add_message_sync("user", "first")
    with pytest.warns(RuntimeWarning, match="'Session.add_message' was never awaited"):
        s.add_message("user", "second")
    calls = {"add_message_sync": lambda: s.add_message_sync("user", "third"),
             "add_messages_sync": lambda: s.add_messages_sync([{"role": "user", "content": "x"}]),
             "build_sync": lambda: s.build_sync(max_tokens=500),
             "end_sync": lambda: s.end_sync()}
    with pytest.raises(ConfigError, match=r"Session\.add_message\(\.\.\.\) was called without"):
        calls[then]()


def test_async_code_that_forgets_await_gets_an_error() -> None:
    s = _session()

    async def turn() -> None:
        await s.add_message("user", "hello")
        s.add_message("assistant", "hi")  # type: ignore[unused-coroutine]  # the mistake
        await s.build(max_tokens=500)

    with pytest.warns(RuntimeWarning, match="never awaited"), \
            pytest.raises(ConfigError, match=r"await session\.add_message\(\.\.\.\)"):
        asyncio.run(turn())


def test_every_proper_use_is_silent() -> None:
    s = _session()

    async def uses() -> None:
        await s.add_message("user", "one")
        await asyncio.create_task(s.add_message("assistant", "two"))
        await asyncio.gather(s.add_message("user", "three"), s.add_message("user", "four"))
        await asyncio.wait_for(s.build(max_tokens=500), timeout=60)
        cancelled = asyncio.create_task(s.build(max_tokens=500))
        cancelled.cancel()  # cancelled before it started: driven, not dropped
        with pytest.raises(asyncio.CancelledError):
            await cancelled

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        asyncio.run(uses())
        assert asyncio.run(s.build(max_tokens=500)).tokens > 0
        closed = s.build(max_tokens=500)
        closed.close()  # explicitly closed: a decision, not a mistake
        del closed
        gc.collect()
        stored = _contents(s)[1:]
        # the two gathered calls run at once (each in a worker thread): either order is right
        assert stored[:2] == ["one", "two"] and sorted(stored[2:]) == ["four", "three"]


def test_the_call_is_a_coroutine_to_asyncio() -> None:
    s = _session()
    call = s.build(max_tokens=500)
    try:
        assert asyncio.iscoroutine(call) and inspect.isawaitable(call)
        assert "Session.build" in repr(call)
    finally:
        call.close()
    assert inspect.signature(Session.add_message).parameters["role"].annotation == "str"
