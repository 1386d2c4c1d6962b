"""Gather: each source under its timeout, in one task per source (none for a source alone, and
none for an eager source until it waits), a slow or failing source named and never failing the
build or cancelling its caller."""

from __future__ import annotations

import asyncio

from loomctx.items import ContextItem
from loomctx.sources.gather import gather
from loomctx.sources.protocol import BaseSource, SourceRequest, starts_eager
from loomctx.tokens.registry import counter_for_model


def _request() -> SourceRequest:
    return SourceRequest(query="q", now=0.0, counter=counter_for_model("gpt-4o").counter,
                         budget=100)


class _Source:
    """Answers after ``delay`` seconds (or raises ``error``), noting the task it ran in and
    how many tasks were alive then."""

    def __init__(self, name: str, delay: float = 0.0, error: Exception | None = None) -> None:
        self.name, self.delay, self.error = name, delay, error
        self.task: asyncio.Task[object] | None = None
        self.alive = 0

    async def collect(self, request: SourceRequest) -> list[ContextItem]:
        self.task, self.alive = asyncio.current_task(), len(asyncio.all_tasks())
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.error is not None:
            raise self.error
        return [ContextItem(id=f"{self.name}-1", source=self.name, content="x",
                            kind="evidence")]


def _run(sources: list[_Source], timeout: float = 0.05) -> tuple[dict[str, object], bool]:
    """Gather ``sources``; also whether the calling task was left cancelled."""

    async def go() -> tuple[dict[str, object], bool]:
        out = await gather(sources, {s.name: _request() for s in sources}, timeout)
        task = asyncio.current_task()
        assert task is not None
        left_cancelled = task.cancelling() > 0
        await asyncio.sleep(0)  # the caller goes on (a stray cancellation would land here)
        return dict(out), left_cancelled

    return asyncio.run(go())


def test_a_source_alone_is_collected_in_the_callers_task() -> None:
    caller: list[asyncio.Task[object] | None] = []
    src = _Source("a")

    async def go() -> None:
        caller.append(asyncio.current_task())
        await gather([src], {"a": _request()}, 1.0)

    asyncio.run(go())
    assert src.task is caller[0]


def test_several_sources_take_one_task_each() -> None:
    sources = [_Source(n) for n in "abc"]
    out, _ = _run(sources)
    assert {s.task for s in sources} and len({s.task for s in sources}) == 3
    assert all(s.alive <= 1 + len(sources) for s in sources)  # the caller and one per source
    assert all(out[s.name].items for s in sources)  # type: ignore[attr-defined]


def test_a_slow_source_alone_times_out_and_the_caller_goes_on() -> None:
    out, left_cancelled = _run([_Source("slow", delay=1.0)])
    assert out["slow"].items is None  # type: ignore[attr-defined]
    assert out["slow"].error == "timed out after 0.05s"  # type: ignore[attr-defined]
    assert not left_cancelled


def test_slow_and_failing_sources_are_named_beside_those_that_answered() -> None:
    out, left_cancelled = _run([_Source("ok"), _Source("slow", delay=1.0),
                                _Source("down", error=RuntimeError("backend down"))])
    assert out["ok"].items and out["ok"].error is None  # type: ignore[attr-defined]
    assert out["slow"].error == "timed out after 0.05s"  # type: ignore[attr-defined]
    assert out["down"].error == "RuntimeError: backend down"  # type: ignore[attr-defined]
    assert not left_cancelled


class _Eager(_Source):
    """A :class:`_Source` that says it needs no task of its own."""

    eager = True

    async def collect(self, request: SourceRequest) -> list[ContextItem]:
        self.finished = False
        try:
            return await super().collect(request)
        finally:
            self.finished = True


class _Overridden(_Eager):
    """An eager source's ``collect`` overridden without saying eager again."""

    async def collect(self, request: SourceRequest) -> list[ContextItem]:
        return await super().collect(request)


def test_eager_is_read_from_the_class_that_defines_collect() -> None:
    assert starts_eager(_Eager("a"))
    assert not starts_eager(_Source("a"))
    assert not starts_eager(_Overridden("a"))  # its collect may use what a task holds


def test_eager_sources_that_answer_at_once_take_no_task() -> None:
    caller: list[asyncio.Task[object] | None] = []
    sources = [_Eager(n) for n in "abc"]

    async def go() -> dict[str, object]:
        caller.append(asyncio.current_task())
        return dict(await gather(sources, {s.name: _request() for s in sources}, 1.0))

    out = asyncio.run(go())
    assert all(s.task is caller[0] and s.alive == 1 for s in sources)
    assert all(out[s.name].items for s in sources)  # type: ignore[attr-defined]


def test_an_overridden_eager_collect_runs_in_a_task_of_its_own() -> None:
    sources = [_Overridden("a"), _Overridden("b")]
    _run(sources)
    assert len({s.task for s in sources}) == 2


def test_eager_sources_that_wait_are_resumed_slow_ones_time_out_failures_are_named() -> None:
    sources = [_Eager("quick", delay=0.001), _Eager("slow", delay=1.0),
               _Eager("early", error=RuntimeError("no index")),
               _Eager("late", delay=0.001, error=RuntimeError("backend down")), _Source("plain")]
    out, left_cancelled = _run(sources)
    assert out["quick"].items and out["quick"].error is None  # type: ignore[attr-defined]
    assert out["plain"].items and out["plain"].error is None  # type: ignore[attr-defined]
    assert out["slow"].items is None  # type: ignore[attr-defined]
    assert out["slow"].error == "timed out after 0.05s"  # type: ignore[attr-defined]
    assert out["early"].error == "RuntimeError: no index"  # type: ignore[attr-defined]
    assert out["late"].error == "RuntimeError: backend down"  # type: ignore[attr-defined]
    assert sources[1].finished  # the timeout reached the source itself: its finally ran
    assert not left_cancelled


def test_a_cancelled_build_cancels_an_eager_source_waiting_in_it() -> None:
    src = _Eager("slow", delay=10.0)

    async def go() -> bool:
        build = asyncio.ensure_future(gather([src], {"slow": _request()}, 60.0))
        await asyncio.sleep(0.01)
        build.cancel()
        try:
            await build
        except asyncio.CancelledError:
            return src.finished
        return False

    assert asyncio.run(go())


def test_a_cancellation_thrown_in_reaches_an_eager_source_whose_wait_just_ended() -> None:
    """The cancel lands after the awaited future got its result, before the source ran again:
    the source is resumed with the cancellation (as ``await`` would), not with the result."""
    seen: list[str] = []

    class Waits(BaseSource):
        name, eager = "waits", True

        def __init__(self, fut: asyncio.Future[None]) -> None:
            self.fut = fut

        async def collect(self, request: SourceRequest) -> list[ContextItem]:
            try:
                await self.fut
            except asyncio.CancelledError:
                seen.append("cancelled")
                raise
            seen.append("resumed")
            return []

    async def go() -> bool:
        fut = asyncio.get_running_loop().create_future()
        build = asyncio.ensure_future(gather([Waits(fut)], {"waits": _request()}, 60.0))
        await asyncio.sleep(0)  # the source waits on fut
        fut.set_result(None)  # its wake-up is scheduled ...
        build.cancel()  # ... and the cancel lands before it
        try:
            await build
        except asyncio.CancelledError:
            return True
        return False

    assert asyncio.run(go()) and seen == ["cancelled"]
