"""The build: Budget → Gather → Select → Compress → Structure → Verify → Report.

:class:`ContextBuilder` holds the sources and options and runs the stages over one
:class:`~loomctx.buildstate.BuildState` per build; each stage lives in its own module:

- Gather: :mod:`loomctx.sources.gather` (every source concurrently, each under a timeout);
- Select: :mod:`loomctx.select.rank` and :mod:`loomctx.select.packer`;
- Compress: :mod:`loomctx.compress.history` (compaction, summaries), ``compress.truncate``;
- Structure: :mod:`loomctx.render.layout` and the format's renderer (:mod:`loomctx.render`);
- Verify: :mod:`loomctx.render.verify` (budget re-count, provider rules, prefix reuse);
- Report: :mod:`loomctx.report`.

Two kinds of build. ``build(query)`` answers a question that is not in the history (retrieval
first, the recent tail by its share). ``build()`` is a *turn*: the input is the history's last
user message, shown once, and the history is an append-only window that keeps the provider's
prompt cache warm (see :mod:`loomctx.compress.history`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from loomctx._jsonl import clean_text
from loomctx._sync import run_sync
from loomctx.budget.manager import DEFAULT_RATIOS, BudgetManager
from loomctx.buildstate import BuildState
from loomctx.compress.history import SUMMARY_ID, dropped_summary
from loomctx.compress.summarize import ExtractiveSummarizer, Summarizer
from loomctx.compress.truncate import truncate_item
from loomctx.errors import BudgetError, ConfigError
from loomctx.events import BuildCompleted, EventSink, NullSink
from loomctx.items import ContextItem, fingerprint
from loomctx.options import BuildOptions
from loomctx.render.chat import EVIDENCE_HEADER
from loomctx.render.layout import LayoutOnce, layout
from loomctx.render.protocol import Layout, Rendered, Renderer
from loomctx.render.registry import formats, renderer_for
from loomctx.render.verify import render_within, reused_parts, reused_prefix
from loomctx.report import BuildReport, build_report
from loomctx.select.packer import Unit, fill, pack
from loomctx.select.rank import per_build, rank_units, tail_units
from loomctx.select.scoring import score
from loomctx.select.tail import about_the_past, tail_share_scale
from loomctx.select.window import (
    NOTE,
    STABLE_KINDS,
    TurnWindow,
    callable_again,
    history_end,
    take_input,
    unreferred,
    without_pending,
)
from loomctx.sources.gather import gather, is_history
from loomctx.sources.protocol import (
    ContextSource,
    SourceRequest,
    check_source,
    declared_share,
    makes_fresh,
)
from loomctx.text.need import Need, need_of, points_back, with_before
from loomctx.tokens.registry import counter_for_model

FORMATS = formats()
"""The formats built in (``loomctx.render.registry.formats()`` also lists registered ones)."""
MIN_BUDGET = 16
COST_CACHE_MAX = 500_000


@dataclass(frozen=True)
class BuildResult:
    """A built context: what to send, its exact size, and the report."""

    rendered: Rendered
    report: BuildReport
    originals: Mapping[str, ContextItem]
    """Full originals of items that were truncated or summarized, by id."""

    @property
    def tokens(self) -> int:
        return self.rendered.tokens

    @property
    def payload(self) -> dict[str, Any]:
        """The request body. Its history messages are copies of the stored ones, and a later
        build of the session reuses a copy that still equals its message: change a payload's
        messages only in the newest one (or copy it first)."""
        return self.rendered.payload

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.rendered.payload.get("messages", [])

    @property
    def text(self) -> str:
        return self.rendered.payload.get("text", "")

    def to_dict(self) -> dict[str, Any]:
        return {**self.rendered.payload, "tokens": self.tokens, "report": self.report.to_dict()}


def _with_declared(defaults: Mapping[str, float], declared: Mapping[str, float],
                   ) -> dict[str, float]:
    """Default ratios with the shares sources declare; the defaults shrink in proportion when
    the declared shares would push the sum past 1."""
    own = sum(declared.values())
    if own > 1.0 + 1e-9:
        raise ConfigError(f"sources declare shares summing to {own:.3f} > 1: lower some of "
                          f"{dict(declared)!r}")
    rest = {k: v for k, v in defaults.items() if k not in declared}
    room, used = 1.0 - own, sum(rest.values())
    scale = min(1.0, room / used) if used else 1.0
    return {**{k: v * scale for k, v in rest.items()}, **declared}


class ContextBuilder:
    """Builds context windows from sources under one budget."""

    def __init__(
        self, sources: Sequence[ContextSource], *, options: BuildOptions | None = None,
        budget: BudgetManager | None = None, summarizer: Summarizer | None = None,
        renderer: Renderer | None = None, events: EventSink | None = None,
        session: str | None = None, tenant: str = "default",
    ) -> None:
        self.options = options or BuildOptions()
        sources = [check_source(s) for s in sources]
        names = [s.name for s in sources]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ConfigError(f"source names must be unique, got duplicates {dup!r}")
        self.sources = list(sources)
        self.tokenizer = counter_for_model(self.options.model,
                                           fallback=self.options.fallback_encoding)
        declared = {s.name: share for s in self.sources
                    if (share := declared_share(s)) is not None}
        self._declared = declared
        if budget is None:
            budget = BudgetManager(window=self.tokenizer.context_window,
                                   ratios=_with_declared(DEFAULT_RATIOS, declared))
        elif declared:
            budget = replace(budget, ratios={**declared, **budget.ratios})
        self.budget = budget
        self.summarizer = summarizer if summarizer is not None else ExtractiveSummarizer()
        self.renderer = renderer if renderer is not None else renderer_for(self.tokenizer,
                                                                           self.options)
        self.events = events if events is not None else NullSink()
        self.session = session
        self.tenant = tenant
        self._costs: dict[int, tuple[Any, int]] = {}
        self.window = TurnWindow(self.options, self.tokenizer.counter, self._measure,
                                 self.renderer.cost)
        self._last_payload: dict[str, Any] | None = None
        self._history_size: dict[str, tuple[int, ContextItem | None, int, int, int]] = {}
        """History source → (items measured, the last of them, their tokens, the largest message,
        the largest tool output)."""
        self._frame: int | None = None

    # -- measure -------------------------------------------------------------------------
    def _measure(self, item: ContextItem) -> int:
        """The item's rendered cost; history messages are cached by their message object."""
        msg = item.message
        if item.kind != "message" or msg is None:
            return self.renderer.cost(item)
        hit = self._costs.get(id(msg))
        if hit is not None and hit[0] is msg:
            return hit[1]
        c = self.renderer.cost(item)
        if len(self._costs) >= COST_CACHE_MAX:  # items evicted elsewhere stay referenced here
            self._costs.clear()
        self._costs[id(msg)] = (msg, c)
        return c

    def _cost(self, item: ContextItem) -> int:
        """Measure a per-build item and record its cost on it."""
        item.tokens = self._measure(item)
        return item.tokens

    # -- build ---------------------------------------------------------------------------
    async def build(
        self, query: str | None = "", *, max_tokens: int | None = None,
        phase: str | None = None, now: float | None = None,
        context: Mapping[str, Any] | None = None,
    ) -> BuildResult:
        """Build one context window: for ``query``, or a turn when ``query`` is None."""
        t0 = time.perf_counter()
        if max_tokens is not None and (not isinstance(max_tokens, int) or
                                       isinstance(max_tokens, bool) or max_tokens < MIN_BUDGET):
            raise ConfigError(f"max_tokens must be an int >= {MIN_BUDGET}, got {max_tokens!r}")
        if query is not None and not isinstance(query, str):
            raise ConfigError(f"query must be a string or None (a turn), got {query!r}")
        if query is not None:
            query = clean_text(query)  # lone surrogates → U+FFFD, as for every input text
        alloc = self.budget.allocate(max_tokens, phase=phase)
        need = need_of(query or "")
        if need.text:  # a question about the past: the tail's share shrinks at small budgets
            scale = tail_share_scale(need.text, alloc.total, self.options.tail_full_at)
            if scale < 1.0:
                alloc = replace(alloc, shares={
                    k: int(v * scale) if any(s.name == k and is_history(s) for s in self.sources)
                    else v for k, v in alloc.shares.items()})
        st = BuildState(question=need.text, message=query, asks=need.asks, turn=query is None,
                        now=time.time() if now is None else now, allocation=alloc)
        ctx = dict(context or {})
        st.timings["budget"] = (time.perf_counter() - t0) * 1000

        t = time.perf_counter()
        await self._gather(st, ctx, phase, query or "", need)
        if st.turn and query:  # the question was the history's last user message: a turn
            st.allocation = self.budget.allocate(max_tokens, phase=phase)
        st.timings["gather"] = (time.perf_counter() - t) * 1000

        t = time.perf_counter()
        overhead = self.renderer.overhead(self._sections(st))
        st.available = alloc.total - overhead
        if st.available <= 0:
            raise BudgetError(
                f"the budget of {alloc.total} tokens does not cover the format's fixed framing "
                f"({overhead} tokens): raise max_tokens", required=overhead,
                available=alloc.total)
        ordered, window = self._select(st)
        st.timings["select"] = (time.perf_counter() - t) * 1000

        t = time.perf_counter()
        await self._pack(st, ordered, window)
        if not st.turn:
            self._top_up(st, ordered)
        st.timings["compress"] = (time.perf_counter() - t) * 1000

        t = time.perf_counter()
        place = LayoutOnce(self.options.output_instructions)
        rendered, st.included = render_within(self.renderer, place, st.included, alloc.total,
                                              st.reasons)
        if st.turn:
            self._remember(st, place)
        reused = reused_prefix(self.renderer, self._last_payload, rendered.payload,
                               rendered.tokens)
        parts = reused_parts(self._last_payload, rendered.payload)
        self._last_payload = rendered.payload
        st.timings["render"] = (time.perf_counter() - t) * 1000
        st.timings["total"] = (time.perf_counter() - t0) * 1000

        report = build_report(st, self.sources, rendered, self.tokenizer, reused, place,
                              reused_parts=parts)
        self.events.emit(BuildCompleted(tenant=self.tenant, session=self.session,
                                        tokens=rendered.tokens, reused_prefix_tokens=reused,
                                        report=report, at=st.now))
        return BuildResult(rendered=rendered, report=report, originals=st.originals)

    def build_sync(self, query: str | None = "", **kwargs: Any) -> BuildResult:
        """The same as :meth:`build`, for synchronous callers (inside a running loop too)."""
        return run_sync(self.build(query, **kwargs), name="build")

    # -- stages --------------------------------------------------------------------------
    def _note_frame(self) -> int:
        """What a recall note costs beyond its evidence: its message and header (the same for
        every note of this builder's renderer, so measured once)."""
        if self._frame is None:
            self._frame = self.renderer.cost(ContextItem(
                id="recall:frame", source="recall", content=EVIDENCE_HEADER, kind="message",
                role="system", message={"role": "system", "content": EVIDENCE_HEADER},
                metadata={NOTE: ()}))
        return self._frame

    def _remember(self, st: BuildState, place: Callable[[Sequence[ContextItem]], Layout],
                  ) -> None:
        """Keep a wide question's evidence, as rendered, in place for the next steps: a
        recall note after the newest history message shown, so the next request repeats it byte
        for byte (:mod:`loomctx.select.window`). While tools are at work, any turn's evidence
        that holds every one of retrieval's best matches out of view is kept so: it would
        otherwise be re-sent after each tool result, and the next steps, finding it shown, add
        none. Evidence cut short by the room stays volatile (kept, the next steps would add the
        rest, note after note), and so does evidence while one of those matches is the
        session's own tool output, left out as ``callable`` (counted as shown instead, the
        notes lost a planted fact at 4k: benchmarks/HISTORY.md). Only when the window's room
        still holds it and the next step's messages: a note must never be what makes the window
        compact."""
        lay = place(st.included)
        if not lay.history or not st.window_start:
            return
        source = next(iter(st.window_start))
        after = lay.history[-1]
        # notes an earlier build at this same history end left here were not shown: this
        # build's evidence (or none) replaces them
        evidence = [it for it in lay.evidence if it.kind != "custom"]
        whole = self.window.tools_at_work(st) and st.recall_missing <= {it.id for it in evidence}
        if not (st.recall_wide or whole) or not evidence:
            self.window.remember(source, after.id, None)
            return  # a small pool stays volatile: kept, it would fill the window sooner
        text = EVIDENCE_HEADER + "\n\n" + "\n\n".join(it.content for it in evidence)
        note = ContextItem(
            id=f"recall:{after.id}:{fingerprint(text)[:8]}", source=source, content=text,
            kind="message", role="system", message={"role": "system", "content": text},
            seq=after.seq, timestamp=after.timestamp,
            metadata={NOTE: tuple(it.id for it in evidence)})
        shown = sum(it.tokens or 0 for it in st.included if st.reasons.get(it.id) == "window")
        # kept, a note that would make the next request compact stays volatile
        fits = shown + self._measure(note) <= st.window_room - self.options.volatile_share * \
            st.available
        self.window.remember(source, after.id, note if fits else None)

    def _top_up(self, st: BuildState, ordered: Mapping[str, list[Unit]]) -> None:
        """Spend the framing of sections that stayed empty on the best units still out.

        Packing reserves the framing of every section the build may fill (:meth:`_sections`).
        A section that stayed empty (no history line made it in, no summary was written)
        leaves its header's tokens unused: ~10 at a 512-token budget, where a passage that
        missed by a few tokens would have fit. A question build (a turn's layout is fixed by
        its window) runs the packer's leftover phase again (:func:`~loomctx.select.packer.fill`)
        over the units still out in the sections already shown, none of the history's (its
        tail stays contiguous). They stay out if the text would then exceed the budget.
        """
        history = {s.name for s in self.sources if is_history(s)}
        shown = {"context" if it.source in history else it.section for it in st.included}
        if self.options.output_instructions:
            shown.add("output")
        freed = st.allocation.total - st.available - self.renderer.overhead(frozenset(shown))
        if freed <= 0:
            return
        taken = {it.id for it in st.included}
        rest = {s: [u for u in units if all(it.section in shown and it.id not in taken
                                            for it in u.items)]
                for s, units in ordered.items() if s not in history}
        more = fill(rest, allocation=st.allocation, available=st.available + freed,
                    included=st.included)
        if not more.included:
            return
        with_more = [*st.included, *more.included]
        rendered = self.renderer.render(layout(with_more, self.options.output_instructions))
        if rendered.tokens > st.allocation.total:  # the framing estimate was short: keep as is
            return
        st.included = with_more
        st.reasons.update(more.reasons)

    def _request(self, st: BuildState, source: ContextSource, ctx: dict[str, Any],
                 phase: str | None) -> SourceRequest:
        return SourceRequest(query=st.question, message=st.message, now=st.now,
                             counter=self.tokenizer.counter,
                             budget=st.allocation.share(source.name),
                             total=st.allocation.total, phase=phase,
                             context={**ctx, "turn": st.turn})

    async def _gather(self, st: BuildState, ctx: dict[str, Any], phase: str | None,
                      asked: str, need: Need) -> None:
        """Collect every source. The history comes first (it is in memory): a turn takes its
        input from it, and the other sources get it as ``context["history"]`` (per-turn
        retrieval re-derives its query from the newest step)."""
        timeout = self.options.source_timeout
        history = [s for s in self.sources if is_history(s)]
        rest = [s for s in self.sources if not is_history(s)]
        st.gathered.update(await gather(
            history, {s.name: self._request(st, s, ctx, phase) for s in history}, timeout))
        if history:
            items = st.gathered[history[0].name].items or []
            ctx = {**ctx, "history": items}
            if not st.turn and _asked_last(items, asked):
                st.turn = True  # build(question) after adding it: show it once, as a turn
            elif not st.turn and points_back(need):  # a follow-up: it needs the last turn
                st.question = with_before(need, next(
                    (it.content for it in reversed(items[-64:]) if it.role == "user"), None)).text
            if st.turn:
                take_input(st, history[0].name, self.window.needs)
                ctx["history_in_view"] = self._in_view(history[0].name, items, st)
                if not st.refers:  # nothing out of view to recall of the session's own
                    ctx["own_past"] = False
        st.gathered.update(await gather(
            rest, {s.name: self._request(st, s, ctx, phase) for s in rest}, timeout))
        for s in self.sources:
            if s.name not in st.candidates:
                # gather's own list (no build writes into it): no second copy of a history
                st.candidates[s.name] = st.gathered[s.name].items or []

    def _in_view(self, source: str, items: Sequence[ContextItem], st: BuildState) -> bool:
        """Whether this turn's window will show the whole history, uncut: it has never started
        later than the first message, the history fits the window's room at the latest turn
        built at this budget (half the budget before any was) and no message is near the size
        the window clips it to (a tool's output: no larger than its own cut, which is fixed
        for the room, :meth:`TurnWindow.tool_clip`). Recall of the session's own messages then
        finds only what is in view, and its source may skip it
        (``context["history_in_view"]``)."""
        if any(key[0] == source and at > 0
               for key, (_, at) in self.window.starts(history_end(items))):
            return False
        total = st.allocation.total
        # The history only grows at its end: sum what was added since the last turn.
        n, last, size, biggest, tool = self._history_size.get(source, (0, None, 0, 0, 0))
        if n > len(items) or (n and items[n - 1] is not last):
            n, size, biggest, tool = 0, 0, 0, 0
        for it in items[n:]:
            c = self._measure(it)
            size += c
            if it.role == "tool":
                tool = max(tool, c)
            else:
                biggest = max(biggest, c)
        if items:
            self._history_size[source] = (len(items), items[-1], size, biggest, tool)
        nominal = self.window.nominal.get(total, total // 2)
        return size <= nominal and biggest <= total // 8 and \
            tool <= self.window.clip_sizes(nominal)[1]

    def _sections(self, st: BuildState) -> frozenset[str]:
        """The layout sections this build may fill (their framing is reserved up front)."""
        present: set[str] = set()
        for s in self.sources:
            items = st.candidates.get(s.name)
            if items:
                present |= {"context"} if is_history(s) else {it.section for it in items}
        if self.options.summarize_history and any(is_history(s) for s in self.sources):
            present.add("state")
        if self.options.output_instructions:
            present.add("output")
        return frozenset(present)

    def _select(self, st: BuildState) -> tuple[dict[str, list[Unit]], list[ContextItem]]:
        """Rank every source into units; in a turn, fix the history window first."""
        opts = self.options.select
        if opts.past_recency_weight is not None and about_the_past(st.question):
            opts = replace(opts, recency_weight=opts.past_recency_weight)
        ordered: dict[str, list[Unit]] = {}
        window: list[ContextItem] = []
        stable = 0
        to_rank: dict[str, list[ContextItem]] = {}
        seen: set[str] = set()
        names = [s.name for s in self.sources if not is_history(s)]
        names += [n for n in st.candidates if n not in names and not any(
            s.name == n for s in self.sources)]  # a turn's input when no source takes it
        fresh = {s.name for s in self.sources if makes_fresh(s)}
        for name in names:
            kept = []
            own = name in fresh  # made for this build alone: scored in place, not copied
            for it in st.candidates.get(name, []):
                if opts.dedup and it.kind != "message":
                    fp = it.fingerprint
                    if fp in seen:
                        st.reasons[it.id] = "duplicate"
                        continue
                    seen.add(fp)
                kept.append(it if own else per_build(it))
            if st.turn and not st.refers:  # the message refers to nothing said before
                kept = unreferred(st, name, kept, self.session)
            to_rank[name] = kept
            if st.turn:  # what the prefix needs before the history: pinned and stable parts
                share = st.allocation.share(name)
                stable += sum(self._measure(it) for it in kept if it.pinned)
                stable += min(share, sum(self._measure(it) for it in kept
                                         if not it.pinned and it.kind in STABLE_KINDS))
        for src in self.sources:
            if not is_history(src):
                continue
            items = without_pending(st, st.candidates.get(src.name, []))
            if st.turn:
                placed = self.window.place(st, src.name, items, stable, self._cost)
                if placed is not None and not window:
                    st.recall_need = self.window.need(st, _shown(placed), self.session)
                    st.recall_wide = self.window.wide(st)
                    reserve = self.window.reserve(st)
                    if reserve > self.options.volatile_share * st.available:
                        st.recall_reserve = reserve
                        placed = self.window.place(st, src.name, items, stable, self._cost,
                                                   reserve) or placed
                if placed is not None:
                    window.extend(placed)
                    continue
            ordered[src.name], st.unmeasured[src.name] = tail_units(
                items, st.available, st.question, st.now, opts, self._cost)
        if st.turn and window and self.window.tools_at_work(st):
            to_rank = {name: callable_again(st, name, kept_items, self.session)
                       for name, kept_items in to_rank.items()}
        score([it for its in to_rank.values() for it in its], st.question, st.now, opts)
        shown = _shown(window)
        for it in window:
            for member in it.metadata.get(NOTE, ()):
                st.noted[member] = it
        for name, kept_items in to_rank.items():
            if shown:
                for it in kept_items:
                    if it.id in shown:
                        st.reasons[f"{name}\0{it.id}"] = ("recalled" if it.id in st.noted
                                                           else "duplicate")
                kept_items = [it for it in kept_items if it.id not in shown]
            ordered[name] = rank_units(kept_items, st.question, opts, self._cost, st.reasons)
        # the histories' measured units (the ranked sources' items are in to_rank already; a
        # history's unmeasured rest is not viewed)
        measured = (i for name, units in ordered.items() if name not in to_rank for u in units
                    if u.items[0].tokens is not None for i in u.items)
        for it in (*window, *(i for its in to_rank.values() for i in its), *measured):
            st.views.setdefault((it.source, it.id), it)
        return ordered, window

    async def _pack(self, st: BuildState, ordered: dict[str, list[Unit]],
                    window: list[ContextItem]) -> None:
        """Window and summary first (turns), then every source by share and leftover."""
        opts = self.options
        spent = sum(it.tokens or 0 for it in window)
        if st.turn and opts.summarize_history:
            await self.window.summary(st, self.summarizer)
            if st.summary is not None:
                spent += st.summary.tokens or 0
        pool: frozenset[str] = frozenset()
        pool_limit = None
        if st.turn:
            if st.recall_reserve:  # the window yielded: the evidence may take all that is left
                left = st.available - spent - sum(u.cost for q in ordered.values() for u in q
                                                  if u.pinned)
            else:  # what the window's room does not hold yet, less the next step's messages
                # and the note's own framing
                left = (st.window_room - sum(it.tokens or 0 for it in window)
                        - int(opts.volatile_share * st.available) - self._note_frame())
            pool, pool_limit = self.window.pool(st, st.candidates, ordered, self._declared,
                                                left)
            self.window.spread(st, ordered, pool, pool_limit)
        spill = getattr(self.renderer, "spill", 1)  # >1: the renderer cuts by section after
        result = pack(
            ordered, allocation=st.allocation, available=max(0, st.available - spent) * spill,
            pinned_over=spill > 1,
            tail_sources=frozenset(ordered) & {s.name for s in self.sources if is_history(s)},
            # uncached cost: cut copies are new objects every build and must not pile up
            truncate=lambda it, n: truncate_item(it, n, self.tokenizer.counter,
                                                 self.renderer.cost),
            min_fragment=opts.min_fragment, pool=pool, pool_limit=pool_limit,
        )
        st.reasons.update(result.reasons)
        st.originals.update(result.truncated)
        for it in window:
            st.reasons[it.id] = ("interrupted_call" if it.metadata.get("repair") else
                                 "truncated" if it.id in st.originals else "window")
        st.included = [*window, *result.included]
        room = st.available - spent - result.spent
        if st.summary is None and opts.summarize_history and room >= opts.min_fragment:
            histories = [st.candidates.get(s.name, []) for s in self.sources if is_history(s)]
            try:
                st.summary = await dropped_summary(
                    histories, {it.id for it in st.included}, room, self.summarizer,
                    self.tokenizer.counter, self.renderer.cost)
            except Exception as exc:  # a failed summary never replaces content: report it
                st.reasons[SUMMARY_ID] = f"summary failed: {type(exc).__name__}: {exc}"
        if st.summary is not None:
            st.included.append(st.summary)
            st.reasons[st.summary.id] = "summary"
        for it in result.included:
            if it.metadata.get("repair") and st.reasons.get(it.id) != "truncated":
                st.reasons[it.id] = "interrupted_call"


def _asked_last(items: Sequence[ContextItem], question: str) -> bool:
    """Whether ``question`` is the history's last message, from the user (the habit of
    adding the question and then building for it)."""
    last = items[-1] if items else None
    return (last is not None and last.role == "user" and last.kind == "message"
            and bool(question.strip()) and last.content.strip() == question.strip())


def _shown(window: Sequence[ContextItem]) -> set[str]:
    """Ids a turn's window shows: its messages and the evidence in its recall notes."""
    shown = {it.id for it in window}
    for it in window:
        shown.update(it.metadata.get(NOTE, ()))
    return shown


__all__ = ["FORMATS", "BuildOptions", "BuildResult", "ContextBuilder"]
