"""Gather: every source's ``collect`` runs concurrently, each under a timeout.

A source that fails or is slow never fails the build: its error is kept for the report and the
build goes on without it. A source that answered while part of it failed recorded the part on its
request (:meth:`~loomctx.sources.protocol.SourceRequest.failed`): each build has its own requests,
so the report of one build names only that build's failures.

Every build gathers every source, most of which answer at once from memory. A source that says
it needs no task of its own (``eager``, :func:`~loomctx.sources.protocol.starts_eager`) runs in
the build's own task up to its first wait, as a task of ``asyncio.eager_task_factory`` (Python
3.12+) would, on every Python the library supports; only what then still waits gets a task and a
timer. The timer is one on the task already collecting (``asyncio.timeout``, Python 3.11+) rather
than ``asyncio.wait_for``'s task of its own, and one source left alone is awaited in the build's
own task, not in a task of ``asyncio.gather``.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Coroutine, Generator, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar, cast

from loomctx._jsonl import clean_text
from loomctx.buildstate import Gathered
from loomctx.items import ContextItem
from loomctx.sources.history import HistorySource
from loomctx.sources.protocol import ContextSource, SourceRequest, is_history, starts_eager

_T = TypeVar("_T")

if sys.version_info >= (3, 11):
    async def _within(call: Awaitable[_T], timeout: float) -> _T:
        """``await call``, or :class:`TimeoutError` after ``timeout`` seconds."""
        async with asyncio.timeout(timeout):
            return await call
else:  # pragma: no cover - Python 3.10
    async def _within(call: Awaitable[_T], timeout: float) -> _T:
        """``await call``, or :class:`asyncio.TimeoutError` after ``timeout`` seconds."""
        return await asyncio.wait_for(call, timeout)


async def gather(sources: Sequence[ContextSource], requests: Mapping[str, SourceRequest],
                 timeout: float) -> dict[str, Gathered]:
    """Each source's items (or its error) and elapsed time, by source name."""

    def kept(src: ContextSource, items: Sequence[ContextItem], t: float) -> Gathered:
        failures = requests[src.name].failures  # parts that failed in this build
        partial = ("partial: " + "; ".join(f"{k} failed: {v}" for k, v in failures.items())
                   if failures else None)
        if not is_history(src):
            out = _clean(items)
        elif isinstance(src, HistorySource) and isinstance(items, list):
            # Its view is a new list whenever the history changes, never changed once handed
            # out, and no build writes into it: shared, not copied (the garbage collector would
            # walk a fresh copy of a 100k history twice per build).
            out = items
        else:  # history is checked on add
            out = list(items)
        return Gathered(out, partial, (time.perf_counter() - t) * 1000)

    def failed(exc: Exception, t: float) -> Gathered:
        why = (f"timed out after {timeout}s" if isinstance(exc, asyncio.TimeoutError)
               else f"{type(exc).__name__}: {exc}")
        return Gathered(None, why, (time.perf_counter() - t) * 1000)

    async def rest(src: ContextSource, call: Awaitable[Sequence[ContextItem]],
                   t: float) -> Gathered:
        try:
            return kept(src, await _within(call, timeout), t)
        except Exception as exc:  # a source must never fail the build: report it
            return failed(exc, t)

    done: dict[str, Gathered] = {}
    waiting: list[tuple[ContextSource, Awaitable[Sequence[ContextItem]], float]] = []
    for src in sources:
        t = time.perf_counter()
        try:
            call = src.collect(requests[src.name])
            if not (starts_eager(src) and isinstance(call, Coroutine)):
                waiting.append((src, call, t))
                continue
            step = call.send(None)  # its first step, in this task
        except StopIteration as stop:  # it answered without waiting
            try:
                done[src.name] = kept(src, stop.value, t)
            except Exception as exc:
                done[src.name] = failed(exc, t)
            continue
        except Exception as exc:  # a source must never fail the build: report it
            done[src.name] = failed(exc, t)
            continue
        waiting.append((src, _Resumed(call, step), t))
    if len(waiting) == 1:
        done[waiting[0][0].name] = await rest(*waiting[0])
    elif waiting:
        results = await asyncio.gather(*(rest(*w) for w in waiting))
        done.update((w[0].name, r) for w, r in zip(waiting, results, strict=True))
    return {s.name: done[s.name] for s in sources}


class _Resumed(Awaitable[_T]):
    """An eager source's ``collect``, started in the build's task and now waiting on ``step``:
    awaited, it goes on from there (as ``await`` would have), in whatever task awaits it."""

    __slots__ = ("_call", "_step")

    def __init__(self, call: Coroutine[Any, Any, _T], step: Any) -> None:
        self._call, self._step = call, step

    def __await__(self) -> Generator[Any, Any, _T]:
        call, step = self._call, self._step
        while True:
            try:
                sent = yield step
            except GeneratorExit:
                call.close()
                raise
            except BaseException as exc:  # a cancellation: handed to the source, as await does
                try:
                    step = call.throw(exc)
                except StopIteration as stop:
                    return cast(_T, stop.value)
            else:
                try:
                    step = call.send(sent)
                except StopIteration as stop:
                    return cast(_T, stop.value)


def _clean(items: Sequence[ContextItem]) -> list[ContextItem]:
    """A source's output is a boundary too: text holding lone surrogates (undecodable bytes
    from argv or a file, a cut UTF-16 string) would make the request unsendable as UTF-8, so
    such text is replaced by U+FFFD, the rule history input and the stores apply. History
    messages are checked when added; the rest are encoded at once, and only when that fails
    looked at one by one."""
    out = list(items)
    try:  # one encoding of every text: a surrogate in any of them fails it
        "".join([it.content for it in out if it.kind != "message"]).encode("utf-8")
        return out
    except UnicodeEncodeError:
        pass
    for k, it in enumerate(out):
        if it.kind != "message" and clean_text(it.content) is not it.content:
            out[k] = replace(it, content=clean_text(it.content))
    return out


__all__ = ["gather", "is_history"]
