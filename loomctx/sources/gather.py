"""Gather: every source's ``collect`` runs concurrently, each under a timeout.

A source that fails or is slow never fails the build: its error is kept for the report and the
build goes on without it. A source that answered while part of it failed recorded the part on its
request (:meth:`~loomctx.sources.protocol.SourceRequest.failed`): each build has its own requests,
so the report of one build names only that build's failures.

Every build gathers every source, most of which answer at once: the timeout is a timer on the
task already collecting (``asyncio.timeout``, Python 3.11+) rather than ``asyncio.wait_for``'s
task of its own per source, and one source alone is collected in the build's own task, not in a
task of ``asyncio.gather``. Half the tasks of a proxied turn's build were these.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import replace
from typing import TypeVar

from loomctx._jsonl import clean_text
from loomctx.buildstate import Gathered
from loomctx.items import ContextItem
from loomctx.sources.history import HistorySource
from loomctx.sources.protocol import ContextSource, SourceRequest, is_history

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

    async def one(src: ContextSource) -> Gathered:
        t = time.perf_counter()
        try:
            request = requests[src.name]
            items = await _within(src.collect(request), timeout)
            failures = request.failures  # parts that failed in this build
            partial = ("partial: " + "; ".join(f"{k} failed: {v}" for k, v in failures.items())
                       if failures else None)
            if not is_history(src):
                kept = _clean(items)
            elif isinstance(src, HistorySource) and isinstance(items, list):
                # Its view is a new list whenever the history changes, never changed once
                # handed out, and no build writes into it: shared, not copied (the garbage
                # collector would walk a fresh copy of a 100k history twice per build).
                kept = items
            else:  # history is checked on add
                kept = list(items)
            return Gathered(kept, partial, (time.perf_counter() - t) * 1000)
        except asyncio.TimeoutError:
            return Gathered(None, f"timed out after {timeout}s", (time.perf_counter() - t) * 1000)
        except Exception as exc:  # a source must never fail the build: report it
            return Gathered(None, f"{type(exc).__name__}: {exc}",
                            (time.perf_counter() - t) * 1000)

    if len(sources) == 1:
        return {sources[0].name: await one(sources[0])}
    results = await asyncio.gather(*(one(s) for s in sources))
    return {s.name: r for s, r in zip(sources, results, strict=True)}


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
