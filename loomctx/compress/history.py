"""History that keeps the prompt cache warm: an append-only window between compaction steps.

A provider's prompt cache reuses the longest byte-identical prefix of consecutive requests. A
window that slides by one message every turn changes the request right after the system prompt,
so nothing after it is reused. Instead, a turn build shows the history from a *compaction point*
onwards and moves that point only in large steps:

- compaction points are fixed positions in the history, about ``gap`` tokens apart (estimated
  from text length, so they do not depend on when builds happened);
- a build shows the history from the earliest point whose tail fits the room it has; as turns
  are added the same point keeps fitting, so the window only grows at its end (append-only);
- when the tail outgrows the room, the window jumps to a later point: one compaction step,
  after which the window is down to about ``room - gap`` tokens (the low-water mark) and many
  turns can append again;
- what lies before the point is summarized once per step into a block whose text depends only
  on the compacted messages, so it is byte-identical on every later turn until the next step.

Nothing is lost: compacted messages stay in the store and are reported with reason
``compacted``.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

from loomctx.compress.summarize import Summarizer
from loomctx.items import ContextItem
from loomctx.tokens.protocol import TokenCounter

SUMMARY_ID = "summary:history"
SUMMARY_SCAN = 8
"""A summary reads at most this many times its own size of the newest left-out messages."""


def estimate(item: ContextItem) -> int:
    """A cheap, deterministic size estimate (UTF-8 bytes / 3): spacing, never budgeting."""
    return len(item.content.encode("utf-8", "surrogatepass")) // 3 + 4


def unit_start(items: Sequence[ContextItem], i: int) -> bool:
    """Whether ``items[i]`` starts a unit (a tool call and its results are one unit)."""
    return i == 0 or items[i].group is None or items[i].group != items[i - 1].group


@dataclass
class _Points:
    first: str
    done: int = 0
    acc: int = 0
    points: list[int] = field(default_factory=lambda: [0])


@dataclass
class Sums:
    """A history's costs summed from its start (``prefix[i]``: the first ``i`` items) and the
    indices that start a unit, extended as items arrive."""

    last: ContextItem
    prefix: list[int] = field(default_factory=lambda: [0])
    starts: list[int] = field(default_factory=list)


def extends(items: Sequence[ContextItem], done: int, last: ContextItem | None) -> bool:
    """Whether ``items`` still begin with the ``done`` items seen before, the last of them
    ``last``: the history only grew at its end (messages dropped at the front move it)."""
    return done <= len(items) and (done == 0 or items[done - 1] is last)


class Compactor:
    """Compaction points and summaries of one builder's history sources (kept across builds)."""

    def __init__(self) -> None:
        self._points: dict[tuple[str, int], _Points] = {}
        self._costs: dict[tuple[str, Hashable], Sums] = {}
        self._summaries: dict[tuple[str, str, int, int], ContextItem | None] = {}

    def points(self, source: str, items: Sequence[ContextItem], gap: int) -> list[int]:
        """Indices where the shown window may start, extended incrementally as items arrive."""
        if not items:
            return [0]
        key = (source, gap)
        st = self._points.get(key)
        if st is None or st.first != items[0].id or st.done > len(items):
            st = self._points[key] = _Points(first=items[0].id)
            if len(self._points) > 64:  # budgets change rarely; forget the oldest
                self._points.pop(next(iter(self._points)))
        for i in range(st.done, len(items)):
            if st.acc >= gap and unit_start(items, i):
                st.points.append(i)
                st.acc = 0
            st.acc += estimate(items[i])
        st.done = len(items)
        return st.points

    def window_start(self, source: str, items: Sequence[ContextItem], room: int, gap: int,
                     sums: Sums) -> int:
        """Index of the first item shown in full: the earliest compaction point whose tail
        fits ``room``; ``len(items)`` when not even the newest unit fits.

        The tail that fits starts at the earliest unit start ``s`` with ``cost(items[s:]) <=
        room`` (costs are never negative, so every later unit start fits too), read off the
        items' :meth:`sums`."""
        if not items:
            return 0
        need = sums.prefix[len(items)] - room  # a unit start whose prefix reaches this fits
        starts = sums.starts
        k = bisect_left(starts, need, key=lambda i: sums.prefix[i])
        fit = starts[k] if k < len(starts) else len(items)
        if fit == 0:
            return 0
        later = [p for p in self.points(source, items, gap) if p >= fit]
        return min(later) if later else fit

    def sums(self, source: str, items: Sequence[ContextItem],
              cost: Callable[[ContextItem], int], variant: Hashable) -> Sums:
        """The prefix sums (``prefix[i]``: the cost of ``items[:i]``) and unit starts of
        ``items``, kept from build to build while the history only grows at its end (the last
        item summed is where it was: messages dropped at the front move it) and ``variant``
        stays: a turn measures its new messages, not the whole history. ``variant`` names
        anything else that changes the items' costs (a clip size, where clipping starts).
        ``items`` must not be empty."""
        key = (source, variant)
        st = self._costs.get(key)
        done = 0 if st is None else len(st.prefix) - 1
        if st is None or not extends(items, done, st.last):
            st = self._costs[key] = Sums(last=items[0])
            if len(self._costs) > 64:  # variants change rarely; forget the oldest
                self._costs.pop(next(iter(self._costs)))
        prefix, starts = st.prefix, st.starts
        for i in range(len(prefix) - 1, len(items)):
            if unit_start(items, i):
                starts.append(i)
            prefix.append(prefix[-1] + cost(items[i]))
        st.last = items[-1]
        return st

    async def summary(self, source: str, items: Sequence[ContextItem], max_tokens: int,
                      summarizer: Summarizer, counter: TokenCounter,
                      cost: Callable[[ContextItem], int]) -> ContextItem | None:
        """The block that stands for ``items`` (everything before the window), or None.

        Computed once per compaction step and cached, so later turns send the same bytes.
        Raises whatever the summarizer raises (the builder reports it)."""
        if not items or max_tokens < 16:
            return None
        key = (source, items[-1].id, len(items), max_tokens)
        if key in self._summaries:
            return self._summaries[key]
        picked: list[ContextItem] = []
        scanned = 0
        for it in reversed(items):
            picked.append(it)
            scanned += min(estimate(it), max_tokens)  # one huge message does not end the scan
            if scanned > SUMMARY_SCAN * max_tokens:
                break
        picked.reverse()
        item = await summary_item(picked, len(items), max_tokens, summarizer, counter, cost)
        if len(self._summaries) > 64:
            self._summaries.pop(next(iter(self._summaries)))
        self._summaries[key] = item
        return item


async def summary_item(items: Sequence[ContextItem], total: int, max_tokens: int,
                       summarizer: Summarizer, counter: TokenCounter,
                       cost: Callable[[ContextItem], int]) -> ContextItem | None:
    """A ``state`` item summarizing ``items`` (the newest of ``total`` left-out messages)
    within ``max_tokens`` as rendered, or None when nothing useful fits."""
    if not items:
        return None
    head = (f"Summary of the {total} earlier messages not shown"
            + (f" (from the newest {len(items)}):\n" if len(items) < total else ":\n"))
    frame = cost(ContextItem(id=SUMMARY_ID, source="summary", content=head, kind="state"))
    room = max_tokens - frame - 2
    if room < 8:
        return None
    text = await summarizer.summarize(items, room, counter)
    if not text.strip():
        return None
    item = ContextItem(id=SUMMARY_ID, source="summary", content=head + text, kind="state",
                       metadata={"summarizes": [it.id for it in items]})
    item.tokens = cost(item)
    return item if item.tokens <= max_tokens else None


async def dropped_summary(histories: Sequence[Sequence[ContextItem]], kept: set[str],
                          room: int, summarizer: Summarizer, counter: TokenCounter,
                          cost: Callable[[ContextItem], int]) -> ContextItem | None:
    """Question builds: the newest history a build left out, summarized into ``room``.

    Reads at most ``SUMMARY_SCAN`` × room tokens of it (what is older stays stored and
    retrievable by id, not summarized on every build); synthetic and pending items never go in.
    """
    dropped: list[ContextItem] = []
    for items in histories:
        scanned = 0
        for it in reversed(items):
            if it.id in kept or it.metadata.get("pending") or it.metadata.get("repair"):
                continue
            dropped.append(it)
            scanned += estimate(it)
            if scanned > SUMMARY_SCAN * room:
                break
    dropped.reverse()
    return await summary_item(dropped, len(dropped), room, summarizer, counter, cost)


__all__ = ["SUMMARY_ID", "SUMMARY_SCAN", "Compactor", "dropped_summary", "estimate", "extends",
           "summary_item", "unit_start"]
