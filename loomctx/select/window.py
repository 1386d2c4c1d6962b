"""Select for a turn build: the input taken from the history, and the history window.

A turn's input is the history's last user message (shown once, with its parts). The history is
shown from a compaction point onwards (:mod:`loomctx.compress.history`), so consecutive turns
only append. Evidence recalled for a wide question, or while tools are at work, is not
volatile: it is shown after the newest message (before the turn's input) and then stays there,
byte-identical, as a *recall note* in the history window until the window compacts past it, so
the provider caches it from the next request on and a later step recalls only what is new.
The room for a turn's new evidence is sized by what retrieval found (:meth:`TurnWindow.pool`).
:class:`TurnWindow` keeps what must be the same from turn to turn (compaction points, clipped
messages, summaries, recall notes) for one builder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Protocol

from loomctx.buildstate import BuildState
from loomctx.compress.history import SUMMARY_ID, Compactor, extends
from loomctx.compress.summarize import Summarizer
from loomctx.compress.truncate import truncate_item
from loomctx.items import ContextItem, Tier
from loomctx.retrieval.source import STANDING_KEY
from loomctx.select.packer import Unit
from loomctx.select.rank import per_build, window_items
from loomctx.text.need import (
    BARE,
    Need,
    is_bare_question,
    need_of,
    refers_back,
    with_before,
)
from loomctx.tokens.protocol import TokenCounter

STABLE_KINDS = frozenset({"system", "tool", "skill", "input"})
"""Kinds that are the same from turn to turn (the cached prefix) or pinned."""
NOTE = "recall_note"
"""Metadata key marking a recall note (its value: the ids of the evidence it shows)."""
WIDE = 0.6
"""Turn builds: a message that asks (:class:`~loomctx.text.need.Need`) is *wide* when at least
this share of retrieval's best candidates is out of view; its evidence is then kept in place as
a recall note."""
RECENT = 4
"""Turn builds: how many of the latest user turns decide whether the window yields."""
YIELD_AFTER = 3
"""Turn builds: a wide question makes the window yield room (``recall_share``) when at least
this many of the latest ``RECENT`` user turns were wide: the conversation has turned to what
is out of view, and the recent window no longer holds what is asked. WIDE, RECENT and
YIELD_AFTER were chosen on LoCoMo's development conversations and the development cache
replays (benchmarks/README.md, recall inside the agent loop)."""
MESSAGE_SHARE = 0.25
"""A message larger than this share of the window's room is shown cut, its head (a tool's
output: past ``tool_output_share``, its head and its last lines, a log's latest entries)."""
TOOL_FLOOR = 192
"""Fewest tokens a tool's output is cut to while a message's cut holds them: its head, its last
lines and the marker saying what was left out. Below it a log shows a line or two, and an agent
at a small budget could not read a result it has just asked for (at 16k and above, and at 4k
on the cache replays, ``tool_output_share`` of the room is larger)."""
MAX_NOTES = 4096
"""Recall notes kept per history source (the oldest go first; compaction drops them sooner)."""
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
    def tool_share(self) -> float: ...
    @property
    def tool_output_share(self) -> float: ...
    @property
    def summary_share(self) -> float: ...
    @property
    def recall_share(self) -> float: ...
    @property
    def min_fragment(self) -> int: ...
    @property
    def summarize_history(self) -> bool: ...


def take_input(st: BuildState, history: str,
               needs: dict[str, tuple[str, Need]] | None = None) -> None:
    """Make the history's last user message the input (P0, its message and parts kept); the
    question for retrieval is the part of the last user message's text that carries its need
    (:func:`~loomctx.text.need.need_text`), after the user's message before it when it leans on
    that one (a follow-up). ``needs`` keeps what each user message needs by its id, from
    build to build: a tool step reads the same message again, and a turn's message is the next
    turn's message before it."""
    items = list(st.gathered[history].items or [])
    last = items[-1] if items else None
    said = [it for it in reversed(items[-64:]) if it.role == "user"][:2]
    if last is not None and last.role == "user" and last.kind == "message":
        items.pop()
        st.candidates[INPUT_SOURCE] = [ContextItem(
            id=last.id, source=INPUT_SOURCE, content=last.content, kind="input", role="user",
            tier=Tier.P0, priority=1.0, timestamp=last.timestamp, message=last.message,
            seq=last.seq)]
    alone = _need(said[0], needs) if said else need_of("")
    need = with_before(alone, _need(said[1], needs) if len(said) > 1 else None)
    if need.text != alone.text:
        st.asked_with = said[1].id
    st.question, st.asks, st.message = need.text, need.asks, said[0].content if said else ""
    st.refers = refers_back(need)
    st.candidates[history] = items


def unreferred(st: BuildState, name: str, items: list[ContextItem], session: str | None,
               ) -> list[ContextItem]:
    """``items`` of source ``name`` without this ``session``'s own memories, for a turn whose
    message refers to nothing said before (``st.refers``, :func:`~loomctx.text.need.
    refers_back`): what the user asked to keep still competes, and knowledge and other
    sessions' memory still count. Those left out are reported as ``unreferred``."""
    return _left_out(st, name, items, "unreferred", lambda it: _own(it, session)
                     and not it.metadata.get(STANDING_KEY))


def callable_again(st: BuildState, name: str, items: list[ContextItem], session: str | None,
                   ) -> list[ContextItem]:
    """``items`` of source ``name`` without this ``session``'s own tool outputs, for a turn
    while tools are at work: the agent calls the tool again for what it needs, and what people
    said, which cannot be had again, gets the evidence's room. Those left out are reported as
    ``callable``."""
    return _left_out(st, name, items, "callable",
                     lambda it: it.role == "tool" and _own(it, session))


def _own(it: ContextItem, session: str | None) -> bool:
    """Whether ``it`` is a memory of this ``session`` (None: no session is)."""
    return session is not None and it.metadata.get("session") == session


def _left_out(st: BuildState, name: str, items: list[ContextItem], reason: str,
              out: Callable[[ContextItem], bool]) -> list[ContextItem]:
    """``items`` without those ``out`` picks, which the report gives ``reason``."""
    kept = []
    for it in items:
        if out(it):
            st.reasons[f"{name}\0{it.id}"] = reason
        else:
            kept.append(it)
    return kept


def _need(it: ContextItem, needs: dict[str, tuple[str, Need]] | None) -> Need:
    """What the user message ``it`` needs, read once per id and text while ``needs`` keeps
    it."""
    if needs is None:
        return need_of(it.content)
    hit = needs.get(it.id)
    if hit is not None and (hit[0] is it.content or hit[0] == it.content):
        return hit[1]
    if len(needs) >= 64:
        needs.pop(next(iter(needs)))
    need = need_of(it.content)
    needs[it.id] = (it.content, need)
    return need


def without_pending(st: BuildState, items: list[ContextItem]) -> list[ContextItem]:
    """The history without its trailing group of calls still waiting for results."""
    k = len(items)
    while k > 0 and items[k - 1].metadata.get("pending"):
        k -= 1
        st.reasons[items[k].id] = "pending_tool_calls"
    return items if k == len(items) else items[:k]


def pool_sources(candidates: Mapping[str, Sequence[ContextItem]],
                 history: Iterable[str] = ()) -> frozenset[str]:
    """Sources whose content changes every turn (evidence, state); the ``history`` sources
    (all messages, however long) are not looked through."""
    skip = frozenset(history)
    return frozenset(name for name, items in candidates.items()
                     if name not in skip and any(it.kind not in STABLE_KINDS
                                                 and it.kind != "message" for it in items))


def _best(ordered: Mapping[str, list[Unit]], pool: frozenset[str]) -> Unit | None:
    """The best-scored unit at the head of a ``pool`` source's queue (None when all are
    empty)."""
    heads = [q[0] for name, q in ordered.items() if name in pool and q]
    return max(heads, key=lambda u: u.score) if heads else None


def history_end(items: Sequence[ContextItem]) -> tuple[str, int] | None:
    """What tells one state of a history from another: its last item's id and its length. A
    turn built again at the same end (a retry, nothing added) reads the window's state as the
    first build of it did, so it sends the same request."""
    return (items[-1].id, len(items)) if items else None


@dataclass(frozen=True)
class _Start:
    """Where the window started (id and index of its first message) at the builds of a
    history ending at ``end``, and where it had started before the history reached it."""

    end: tuple[str, int] | None
    at: tuple[str, int]
    before: tuple[str, int] | None

    def seen(self, end: tuple[str, int] | None) -> tuple[str, int] | None:
        """Where the window last started, for a build of the history ending at ``end``."""
        return self.before if end == self.end else self.at


@dataclass
class _Clipped:
    """A history as :meth:`TurnWindow._clipped` shows it, for its first ``done`` items (the
    last of them: ``last``), with the originals of those it cut."""

    out: list[ContextItem]
    done: int
    last: ContextItem | None = None
    cut: list[ContextItem] = field(default_factory=list)


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
        self._runs: dict[tuple[str, int, int], _Clipped] = {}
        """(History source, clip size, start) → the clipped history as far as it was seen."""
        self._notes: dict[str, dict[str, list[ContextItem]]] = {}
        """History source → id of the message a note follows → the notes after it."""
        self._starts: dict[tuple[str, int], _Start] = {}
        """(History source, gap) → where the window started, as the next build reads it."""
        self._asked: tuple[str | None, tuple[bool, ...]] = (None, ())
        """The latest user turn's input id, and whether each of the latest turns was wide."""
        self.needs: dict[str, tuple[str, Need]] = {}
        """User message id → its text and what it needs (:func:`take_input`)."""
        self._bares: dict[str, bool] = {}
        """Short user messages → whether each only asks (:meth:`_bare`)."""
        self.nominal: dict[int, int] = {}
        """Budget → the room of the window and its input at the latest turn built at it (it
        depends on the budget and the stable parts only): what a history may take and still
        be shown whole."""

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
        if len(self.nominal) >= 64 and st.allocation.total not in self.nominal:
            self.nominal.pop(next(iter(self.nominal)))  # budgets change rarely
        self.nominal[st.allocation.total] = nominal
        gap = max(64, int((1.0 - opts.low_water) * nominal) // 64 * 64)
        return max(0, nominal - inputs), gap, self.clip_sizes(nominal)[0]

    def place(self, st: BuildState, source: str, items: Sequence[ContextItem], stable: int,
              cost: Cost, reserve: int = 0) -> list[ContextItem] | None:
        """The window's items (measured per-build copies), or None when not even the newest
        unit fits (the build then falls back to the tail packing of a question build).

        ``reserve`` is room this turn's evidence needs beyond the volatile share: the window
        gives it up by starting at a later compaction point (the points and the gap do not
        move, so later turns append from there), down to its newest unit: when that does not
        fit what the reserve leaves, the window shows it and the reserve shrinks."""
        room, gap, clip = self.room(st, stable)
        full = room
        room = max(0, room - max(0, reserve - int(self.options.volatile_share * st.available)))
        gathered = st.gathered.get(source)
        end = history_end(gathered.items or [] if gathered is not None else items)
        items = self._with_notes(st, source, list(items))
        # A window that yielded room to a turn's evidence does not grow back at its front on
        # the next turn (that would change the request right after the summary): it appends
        # from where it last started, and what lies before needs no clipping or measuring.
        seen = self._last_start(source, gap, items, end)
        st.window_new = seen is None
        last = seen or 0
        items = self._clipped(st, source, items, clip, last)
        if not items:
            st.window_room = room
            st.window_start[source] = 0
            return []
        # measured once per message: kept between turns, read by the start and the copies
        sums = self.compactor.sums(source, items, self.measure, (clip, last))
        if reserve and sums.starts:  # a window that yields keeps its newest unit
            room = max(room, min(full, sums.prefix[len(items)] - sums.prefix[sums.starts[-1]]))
        st.window_room = room
        start = self._started(source, gap, items, end, max(last, self.compactor.window_start(
            source, items, room, gap, sums)))
        if start >= len(items):
            return None
        st.window_start[source] = start
        prefix = sums.prefix
        return window_items(items[start:], cost,
                            [prefix[i + 1] - prefix[i] for i in range(start, len(items))])

    def _last_start(self, source: str, gap: int, items: Sequence[ContextItem],
                    end: tuple[str, int] | None) -> int | None:
        """The index of the message the window last started at before the history reached
        ``end`` (None when it was never placed: a new window), so a build again at the same end
        starts where the first did."""
        entry = self._starts.get((source, gap))
        last = None if entry is None else entry.seen(end)
        if last is None:
            return None
        first, hint = last
        if hint < len(items) and items[hint].id == first:
            return hint
        return next((i for i, it in enumerate(items) if it.id == first), 0)

    def _started(self, source: str, gap: int, items: Sequence[ContextItem],
                 end: tuple[str, int] | None, start: int) -> int:
        """Record that the window starts at ``start`` when the history ends at ``end`` (for
        :meth:`_last_start`); return it."""
        key = (source, gap)
        if start < len(items):
            if len(self._starts) > 64 and key not in self._starts:  # budgets change rarely
                self._starts.pop(next(iter(self._starts)))
            entry = self._starts.get(key)
            before = None if entry is None else entry.seen(end)
            self._starts[key] = _Start(end, (items[start].id, start), before)
        return start

    def starts(self, end: tuple[str, int] | None) -> list[tuple[tuple[str, int], tuple[str, int]]]:
        """Where the window last started, per (history source, gap): (message id, index), as a
        build of the history ending at ``end`` (:func:`history_end`) sees it."""
        return [(key, at) for key, entry in self._starts.items()
                if (at := entry.seen(end)) is not None]

    def _with_notes(self, st: BuildState, source: str, items: list[ContextItem],
                    ) -> list[ContextItem]:
        """The history with each recall note right after the message it followed when it was
        made. A note is made at the end of the history, so the list still only grows at its end
        and the compaction points stay where they were. A note after the history's last message
        waits until something follows it: the build that made it showed that evidence where this
        turn's goes, and a build again of the same history makes its own. The notes join the
        candidates (the report shows them) and their evidence counts as shown."""
        notes = self._notes.get(source)
        if not notes:
            return items
        out: list[ContextItem] = []
        last = items[-1] if items else None
        for it in items:
            out.append(it)
            after = notes.get(it.id)
            if after and it is not last:
                out.extend(after)
        if len(out) > len(items) and source not in st.noted_sources:
            # the report's rows and the window's indices must agree (pending calls stay last)
            st.candidates[source] = [*out, *st.candidates[source][len(items):]]
            st.noted_sources.add(source)
        return out

    def remember(self, source: str, after: str, note: ContextItem | None) -> None:
        """Keep ``note`` (this turn's evidence as rendered) after the message ``after``, in
        place of notes an earlier build of the same turn left there (this build did not show
        them); None only drops those."""
        notes = self._notes.setdefault(source, {})
        notes.pop(after, None)
        if note is None:
            return
        notes[after] = [note]
        if sum(len(v) for v in notes.values()) > MAX_NOTES:
            notes.pop(next(iter(notes)))

    def _clipped(self, st: BuildState, source: str, items: Sequence[ContextItem], clip: int,
                 start: int = 0) -> list[ContextItem]:
        """Messages larger than ``clip`` tokens shown cut, the same way on every turn (the
        cut is cached), with the original kept in ``originals``; those before ``start`` are
        kept as they are. What earlier turns worked out is kept while the history only grows
        at its end: a turn looks at its new messages only."""
        key = (source, clip, start)
        run = self._runs.get(key)
        if run is None or not extends(items, run.done, run.last):
            run = self._runs[key] = _Clipped(out=list(items[:start]), done=start)
            if len(self._runs) > 64:  # clip sizes and starts change rarely
                self._runs.pop(next(iter(self._runs)))
        for it in items[run.done:]:
            run.out.append(self._clip(it, clip, run.cut))
        if len(items) > run.done:
            run.done, run.last = len(items), items[-1]
        for original in run.cut:
            st.originals[original.id] = original
        return list(run.out)

    def clip_sizes(self, nominal: int) -> tuple[int, int]:
        """The sizes a message and a tool's output are cut past, for a window of ``nominal``
        room (:meth:`room`)."""
        clip = max(self.options.min_fragment, int(nominal * MESSAGE_SHARE) // 64 * 64)
        return clip, self.tool_clip(clip)

    def tool_clip(self, clip: int) -> int:
        """The size a tool's output is cut past where a message is cut past ``clip``."""
        return max(self.options.min_fragment, min(clip, TOOL_FLOOR),
                   int(clip * self.options.tool_output_share / MESSAGE_SHARE))

    def _clip(self, it: ContextItem, clip: int, cut: list[ContextItem]) -> ContextItem:
        """``it``, or its cut copy when it is a message larger than ``clip`` (a tool's output:
        past ``tool_output_share`` of the room, on the same rounding, and not below
        :data:`TOOL_FLOOR`; the original is added to ``cut``)."""
        tool = it.role == "tool"
        if tool:
            clip = self.tool_clip(clip)
        if it.message is None or NOTE in it.metadata or self.measure(it) <= clip:
            return it
        key = (id(it.message), clip)
        hit = self._clips.get(key)
        if hit is None or hit[0] is not it.message:
            copy = truncate_item(per_build(it), clip, self.counter, self.render_cost,
                                 tail=0.5 if tool else 0.0)
            if len(self._clips) > 10_000:
                self._clips.clear()
            hit = self._clips[key] = (it.message, copy)
        if hit[1] is None:
            return it
        cut.append(it)
        return hit[1]

    def need(self, st: BuildState, shown: set[str], session: str | None = None,
             top: int = 8) -> float:
        """How much this turn needs evidence from outside the window: the share of each
        evidence source's best ``top`` candidates that the window does not show (0: what
        retrieval found is all in view; 1: none of it is). The question itself, what the user
        asked to keep (shown anyway) and earlier questions (they hold no answer) are not
        counted. Records whether any of them is this ``session``'s own memory: only then can
        the window hold what is asked (knowledge and other sessions' memory never are)."""
        asked = {it.id for it in st.candidates.get(INPUT_SOURCE, ())}  # the question itself

        def counted(it: ContextItem) -> bool:
            return it.id not in asked and not it.metadata.get(STANDING_KEY)

        best: list[ContextItem] = []
        for name in pool_sources(st.candidates, st.window_start):
            found = st.candidates[name]
            # as many as the best ``top`` count, what holds no answer giving its place to the next
            best += islice((it for it in found[:4 * top]
                            if counted(it) and not self._asked_before(st, it)),
                           sum(map(counted, found[:top])))
        own = [_own(it, session) for it in best]
        st.recall_own = any(own)
        hits = [it.id not in shown for it in best]
        st.recall_missing = frozenset(it.id for it, hit in zip(best, hits, strict=True) if hit)
        st.recall_beyond = (sum(hit and not mine for hit, mine in zip(hits, own, strict=True))
                            / len(hits) if hits else 0.0)
        said = [hit and it.role != "tool" for hit, it in zip(hits, best, strict=True)]
        st.recall_said = sum(said) / len(said) if said else 0.0
        return sum(hits) / len(hits) if hits else 0.0

    def _asked_before(self, st: BuildState, it: ContextItem) -> bool:
        """Whether ``it`` is part of what was asked, not evidence: the turn a follow-up took
        its words from, or an earlier question (:meth:`_bare`)."""
        return it.id == st.asked_with or self._bare(it)

    def _bare(self, it: ContextItem) -> bool:
        """Whether ``it`` is a user's message that only asks (an earlier question: it holds no
        answer, and in view it would make the window look as if it held what is asked)."""
        if it.role != "user" or len(it.content) > BARE:
            return False
        hit = self._bares.get(it.content)
        if hit is None:
            if len(self._bares) >= 4096:
                self._bares.clear()
            hit = self._bares[it.content] = is_bare_question(it.content)
        return hit

    def wide(self, st: BuildState) -> bool:
        """Whether this turn asks a question whose best matches are mostly out of view (and,
        the first time a user turn is seen, count it among the latest turns)."""
        wide = st.recall_need >= WIDE and st.asks and not self.tools_at_work(st)
        inp = st.candidates.get(INPUT_SOURCE)
        last, recent = self._asked
        if inp and inp[0].id != last:  # tool steps of the same turn are not counted again
            self._asked = (inp[0].id, (*recent[-(RECENT - 1):], wide))
        return wide

    def reserve(self, st: BuildState) -> int:
        """Tokens a wide question may take from the window: ``recall_share`` of the budget,
        scaled by its need, once the conversation has turned to what is out of view, or at
        once when some of retrieval's best matches are the session's own messages and none is
        in view, or the window is new (no request sent before shares its prefix: where it
        starts costs no cache). Not when what is out of view is mostly tool output: a tool's
        result can be had again by calling it, what people said cannot, and a window that
        yields to a long tool output is a cache miss for every request after it."""
        at_once = (st.recall_need >= 1.0 or st.window_new) and st.recall_own  # its own past
        if not st.recall_wide or (sum(self._asked[1]) < YIELD_AFTER and not at_once):
            return 0
        if st.recall_said < WIDE or self.tools_at_work(st):
            return 0  # the agent gets what is out of view by calling its tools again
        return int(st.recall_need * self.options.recall_share * st.available)

    @staticmethod
    def tools_at_work(st: BuildState) -> bool:
        """Whether the latest turns ran tools (a tool result among the window's last
        ``RECENT * 4`` messages)."""
        return any(it.role == "tool" for name in st.window_start
                   for it in st.candidates.get(name, ())[-RECENT * 4:])

    def pool(self, st: BuildState, candidates: Mapping[str, Sequence[ContextItem]],
             ordered: Mapping[str, list[Unit]], declared: Mapping[str, float] | None = None,
             left: int = 0,
             ) -> tuple[frozenset[str], int]:
        """Sources whose content changes every turn (evidence, state) and the tokens they may
        take together: ``volatile_share`` of the budget, or for a question its need times the
        room ``left`` for it (the window's room it does not fill), or all the room left when
        the window yielded (the yield was scaled by need), for a statement the share of its
        best candidates beyond the session's own messages times ``left``, or the shares such
        sources declare themselves when those are larger (an explicit choice of the caller),
        stretched to hold the single best unit when it is at most three times that. While
        tools are at work, the share is ``tool_share`` times the share of retrieval's best
        matches out of view (what the window and its recall notes show counts as shown, so a
        step that follows a note adds only what is new; the best unit may still stretch it to
        three times ``tool_share``), and the need beyond it counts only what is out of view
        beyond the session's own messages: the agent's working state is in its window and its
        tools."""
        pool = pool_sources(candidates, st.window_start)
        own = sum(v for k, v in (declared or {}).items() if k in pool)
        working = self.tools_at_work(st)
        share = min(self.options.tool_share, self.options.volatile_share) if working \
            else self.options.volatile_share
        full = int(max(share, min(own, 1.0)) * st.available)
        cap = int(max(share * st.recall_need, min(own, 1.0)) * st.available) if working \
            else full
        if st.asks:
            need = st.recall_beyond if working else st.recall_need
            # a window that yielded did so by need already: what is left is the evidence's
            room = max(0, left) if st.recall_reserve else int(need * max(0, left))
            cap = max(cap, st.recall_reserve, room)
        else:  # a statement's own past keeps to the share (its conversation stays cached); what
            # lies beyond it (knowledge, other sessions) may take the room the window leaves
            cap = max(cap, int(st.recall_beyond * max(0, left)))
        best = _best(ordered, pool)
        if best is not None and 0 < cap < best.cost <= 3 * full:
            cap = best.cost
        return pool, cap

    @staticmethod
    def spread(st: BuildState, ordered: dict[str, list[Unit]], pool: frozenset[str],
               cap: int) -> None:
        """Once the window yielded, its room holds what retrieval found, not one long text: no
        unit but the best takes more than half of the ``cap`` (a pasted text of 3,286 tokens,
        ninth by score, took the room of twenty matches, the answer among them). Those left
        out are reported as ``budget``."""
        if not st.recall_reserve or cap <= 0:
            return  # the common turn: nothing yielded, no need to look for the best unit
        best = _best(ordered, pool)
        if best is None:
            return
        for name in pool:
            queue = ordered.get(name)
            if queue:
                ordered[name] = [u for u in queue if u.cost <= cap // 2 or u.score >= best.score]

    async def summary(self, st: BuildState, summarizer: Summarizer) -> None:
        """The summary of what lies before the window (one block, same until the next step)."""
        for name, start in st.window_start.items():
            if start <= 0:
                continue
            items = [it for it in st.candidates[name][:start]
                     if not it.metadata.get("repair") and NOTE not in it.metadata]
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


__all__ = ["INPUT_SOURCE", "NOTE", "STABLE_KINDS", "TurnWindow", "callable_again",
           "history_end", "take_input", "unreferred", "without_pending"]
