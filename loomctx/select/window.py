"""Select for a turn build: the input taken from the history, and the history window.

A turn's input is the history's last user message (shown once, with its parts). The history is
shown from a compaction point onwards (:mod:`loomctx.compress.history`), so consecutive turns
only append; per-turn content (evidence, state) shares one small pool at the end, so that the
prefix a provider caches is most of the request. :class:`TurnWindow` keeps what must be the same
from turn to turn (compaction points, clipped messages, summaries) for one builder.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from loomctx.buildstate import BuildState
from loomctx.compress.history import SUMMARY_ID, Compactor
from loomctx.compress.summarize import Summarizer
from loomctx.compress.truncate import truncate_item
from loomctx.items import ContextItem, Tier
from loomctx.select.packer import Unit
from loomctx.select.rank import per_build, window_units
from loomctx.tokens.protocol import TokenCounter

STABLE_KINDS = frozenset({"system", "tool", "skill", "input"})
"""Kinds that are the same from turn to turn (the cached prefix) or pinned."""
INPUT_SOURCE = "user_input"

Cost = Callable[[ContextItem], int]


class WindowSettings(Protocol):
    """The build options a turn window reads (:class:`loomctx.options.BuildOptions` has
    them; a Protocol here keeps ``select`` below ``options``)."""

    @property
    def low_water(self) -> float: ...
    @property
    def volatile_share(self) -> float: ...
    @property
    def summary_share(self) -> float: ...
    @property
    def min_fragment(self) -> int: ...
    @property
    def summarize_history(self) -> bool: ...


def take_input(st: BuildState, history: str) -> None:
    """Make the history's last user message the input (P0, its message and parts kept); the
    question for retrieval is the last user message's text."""
    items = list(st.gathered[history].items or [])
    last = items[-1] if items else None
    if last is not None and last.role == "user" and last.kind == "message":
        items.pop()
        st.candidates[INPUT_SOURCE] = [ContextItem(
            id=last.id, source=INPUT_SOURCE, content=last.content, kind="input", role="user",
            tier=Tier.P0, priority=1.0, timestamp=last.timestamp, message=last.message,
            seq=last.seq)]
        st.question = last.content
    else:
        st.question = next((it.content for it in reversed(items[-64:])
                            if it.role == "user"), "")
    st.candidates[history] = items


def without_pending(st: BuildState, items: list[ContextItem]) -> list[ContextItem]:
    """The history without its trailing group of calls still waiting for results."""
    k = len(items)
    while k > 0 and items[k - 1].metadata.get("pending"):
        k -= 1
        st.reasons[items[k].id] = "pending_tool_calls"
    return items if k == len(items) else items[:k]


class TurnWindow:
    """The history window of one builder's turn builds (state kept across builds)."""

    def __init__(self, options: WindowSettings, counter: TokenCounter, measure: Cost,
                 render_cost: Cost) -> None:
        self.options = options
        self.counter = counter
        self.measure = measure
        self.render_cost = render_cost
        self.compactor = Compactor()
        self._clips: dict[tuple[int, int], tuple[object, ContextItem | None]] = {}

    def room(self, st: BuildState, stable: int) -> tuple[int, int, int]:
        """Room for the window, the compaction gap, and the size one message is clipped to.

        The gap and the clip size depend only on the budget and the stable parts, never on
        this turn's input, so they stay the same from turn to turn."""
        opts = self.options
        volatile = int(opts.volatile_share * st.available)
        summary = int(opts.summary_share * st.available) if opts.summarize_history else 0
        inputs = sum(self.measure(it) for its in st.candidates.values() for it in its
                     if it.kind == "input")
        nominal = st.available - (stable - inputs) - volatile - summary
        gap = max(64, int((1.0 - opts.low_water) * nominal) // 64 * 64)
        clip = max(opts.min_fragment, nominal // 4 // 64 * 64)
        return max(0, nominal - inputs), gap, clip

    def place(self, st: BuildState, source: str, items: Sequence[ContextItem], stable: int,
              cost: Cost) -> list[ContextItem] | None:
        """The window's items (measured per-build copies), or None when not even the newest
        unit fits (the build then falls back to the tail packing of a question build)."""
        room, gap, clip = self.room(st, stable)
        items = self._clipped(st, items, clip)
        start = self.compactor.window_start(source, items, room, gap, self.measure)
        if start >= len(items) and items:
            return None
        st.window_start[source] = start
        return [it for u in window_units(items[start:], cost) for it in u.items]

    def _clipped(self, st: BuildState, items: Sequence[ContextItem], clip: int,
                 ) -> list[ContextItem]:
        """Messages larger than ``clip`` tokens shown cut, the same way on every turn (the
        cut is cached), with the original kept in ``originals``."""
        out = []
        for it in items:
            if it.message is None or self.measure(it) <= clip:
                out.append(it)
                continue
            key = (id(it.message), clip)
            hit = self._clips.get(key)
            if hit is None or hit[0] is not it.message:
                cut = truncate_item(per_build(it), clip, self.counter, self.render_cost)
                if len(self._clips) > 10_000:
                    self._clips.clear()
                hit = self._clips[key] = (it.message, cut)
            if hit[1] is None:
                out.append(it)
            else:
                out.append(hit[1])
                st.originals[it.id] = it
        return out

    def pool(self, st: BuildState, candidates: Mapping[str, Sequence[ContextItem]],
             ordered: Mapping[str, list[Unit]], declared: Mapping[str, float] | None = None,
             ) -> tuple[frozenset[str], int]:
        """Sources whose content changes every turn (evidence, state) and the tokens they may
        take together: ``volatile_share`` of the budget, or the shares such sources declare
        themselves when those are larger (an explicit choice of the caller), stretched to hold
        the single best unit when it is at most three times that."""
        pool = frozenset(name for name, items in candidates.items()
                         if any(it.kind not in STABLE_KINDS and it.kind != "message"
                                for it in items))
        own = sum(v for k, v in (declared or {}).items() if k in pool)
        cap = int(max(self.options.volatile_share, min(own, 1.0)) * st.available)
        heads = [q[0] for name, q in ordered.items() if name in pool and q]
        if heads:
            best = max(heads, key=lambda u: u.score)
            if cap < best.cost <= 3 * cap:
                cap = best.cost
        return pool, cap

    async def summary(self, st: BuildState, summarizer: Summarizer) -> None:
        """The summary of what lies before the window (one block, same until the next step)."""
        for name, start in st.window_start.items():
            if start <= 0:
                continue
            items = [it for it in st.candidates[name][:start] if not it.metadata.get("repair")]
            try:
                summary = await self.compactor.summary(
                    name, items, int(self.options.summary_share * st.available), summarizer,
                    self.counter, self.render_cost)
            except Exception as exc:  # a failed summary never replaces content: report it
                st.reasons[SUMMARY_ID] = f"summary failed: {type(exc).__name__}: {exc}"
                return
            if summary is not None:
                st.summary = per_build(summary)
                st.summary.metadata = {**summary.metadata, "compacted": True}
                st.summary.tokens = self.render_cost(st.summary)
            return


__all__ = ["INPUT_SOURCE", "STABLE_KINDS", "TurnWindow", "take_input", "without_pending"]
