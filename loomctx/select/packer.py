"""Budget-aware packing across sources.

1. Pinned (P0) units go in first; if they alone exceed the budget the build fails (BudgetError).
2. P1 units (named skills, task state) go in next, whatever their source's share.
3. Each source packs its own candidates into its share (ratio × total, less what its pinned items
   used). History keeps a contiguous recent tail: it stops at the first unit that does not fit.
   Other sources pack in score order and skip what does not fit.
4. The share a source left unused flows to the sources that still have candidates, best next
   unit first, up to each source's ceiling.
5. If a source's next unit does not fit but at least ``min_fragment`` tokens remain, the unit's
   largest item is cut to fit (a visible marker, the original kept in the report).

A unit is an atomic group: a tool call with its results goes in or out whole.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter

from loomctx.budget.manager import Allocation
from loomctx.errors import BudgetError
from loomctx.items import ContextItem, Tier


@dataclass(slots=True)
class Unit:
    """Items that go in or out together."""

    items: Sequence[ContextItem]
    """In order; read-only (a history's unmeasured rest is a view of its list, not a copy)."""
    source: str
    cost: int
    score: float
    tier: int

    @property
    def pinned(self) -> bool:
        return self.tier == Tier.P0


@dataclass
class PackResult:
    """What the packer chose and why."""

    included: list[ContextItem] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)
    used: dict[str, int] = field(default_factory=dict)
    truncated: dict[str, ContextItem] = field(default_factory=dict)
    """Original items that were cut, by id (the included copy holds the cut text)."""
    spent: int = 0


def make_units(items: Sequence[ContextItem], cost: Callable[[ContextItem], int]) -> list[Unit]:
    """Group items by ``group`` (keeping first-seen order); ungrouped items are units alone."""
    units: list[Unit] = []
    by_group: dict[tuple[str, str], tuple[Unit, list[ContextItem]]] = {}
    for it in items:
        c = cost(it)
        s = it.scores.get("composite", it.priority)
        if it.group is not None:
            key = (it.source, it.group)
            known = by_group.get(key)
            if known is not None:
                u, members = known
                members.append(it)
                u.cost += c
                u.score = max(u.score, s)
                u.tier = min(u.tier, int(it.tier))
                continue
            members = [it]
            u = Unit(members, it.source, c, s, int(it.tier))
            by_group[key] = (u, members)
            units.append(u)
        else:
            units.append(Unit([it], it.source, c, s, int(it.tier)))
    return units


def pack(
    ordered: Mapping[str, list[Unit]],
    *,
    allocation: Allocation,
    available: int,
    tail_sources: frozenset[str],
    truncate: Callable[[ContextItem, int], ContextItem | None] | None = None,
    min_fragment: int = 64,
    pool: frozenset[str] = frozenset(),
    pool_limit: int | None = None,
    pinned_over: bool = False,
) -> PackResult:
    """Choose units under ``available`` tokens. ``ordered[source]`` is in preference order.

    Sources in ``pool`` share one ceiling, ``pool_limit`` tokens in all (a turn build caps
    what changes every turn this way). ``pinned_over`` takes pinned units past
    ``available`` instead of failing (a renderer that cuts its own text fits them later).
    The phases are the module docstring's 1–5."""
    p = _Packing(ordered, allocation, available, tail_sources, pool, pool_limit)
    p.pinned_over = pinned_over
    p.required()
    p.own_shares()
    deferred = p.leftover(cut_from=min_fragment if truncate is not None else None)
    p.cut(deferred, truncate, min_fragment)
    return p.res  # anything without a reason did not fit: the report says "budget"


def fill(
    ordered: Mapping[str, list[Unit]], *, allocation: Allocation, available: int,
    included: Sequence[ContextItem],
) -> PackResult:
    """Phase 4 again, after packing, for room that appeared since (a question build's framing
    of sections left empty): ``ordered`` holds units not chosen yet, ``included`` what was.

    The result holds only the units it adds (and why); ``spent`` counts ``included`` too."""
    p = _Packing(ordered, allocation, available, frozenset(), frozenset(), None)
    for it in included:
        p.ids[it.id] = it
        p.res.used[it.source] = p.res.used.get(it.source, 0) + (it.tokens or 0)
        p.res.spent += it.tokens or 0
    p.leftover(cut_from=None)
    return p.res


class _Packing:
    """One packing: the queues left per source and what went in so far."""

    def __init__(self, ordered: Mapping[str, list[Unit]], allocation: Allocation,
                 available: int, tail_sources: frozenset[str], pool: frozenset[str],
                 pool_limit: int | None) -> None:
        self.res = PackResult()
        self.queues = {s: list(units) for s, units in ordered.items()}
        self.allocation = allocation
        self.available = available
        self.tail = tail_sources
        self.pool = pool
        self.pool_limit = pool_limit
        self.ids: dict[str, ContextItem] = {}
        self.pinned_over = False

    def pool_left(self, s: str) -> int:
        if self.pool_limit is None or s not in self.pool:
            return self.available
        return self.pool_limit - sum(self.res.used.get(p, 0) for p in self.pool)

    def ceiling_left(self, s: str) -> int:
        cap = self.allocation.ceilings.get(s)
        own = self.available if cap is None else cap - self.res.used.get(s, 0)
        return min(own, self.pool_left(s))

    def take(self, u: Unit, reason: str) -> None:
        res = self.res
        cost = u.cost
        for it in u.items:
            other = self.ids.get(it.id)
            if other is not None and u.source in self.tail and other.source != u.source:
                # A retrieved copy of a history message went in first: the history unit wins,
                # so a tool call is never separated from its results by dedup.
                res.included.remove(other)
                res.reasons[f"{other.source}\0{other.id}"] = "duplicate"
                res.used[other.source] -= other.tokens or 0
                res.spent -= other.tokens or 0
            elif other is not None:  # the same memory reached us twice (e.g. tail + recall)
                res.reasons.setdefault(f"{it.source}\0{it.id}", "duplicate")
                cost -= it.tokens or 0
                continue
            self.ids[it.id] = it
            res.included.append(it)
            res.reasons[it.id] = "truncated" if it.id in res.truncated else reason
        res.used[u.source] = res.used.get(u.source, 0) + cost
        res.spent += cost

    def required(self) -> None:
        """1 + 2: pinned units (all of them, or a BudgetError), then P1 units that fit."""
        pinned = [u for q in self.queues.values() for u in q if u.pinned]
        need = sum(u.cost for u in pinned)
        if need > self.available and not self.pinned_over:
            detail = ", ".join(f"{u.items[0].id}={u.cost}" for u in pinned)
            raise BudgetError(
                f"pinned (P0) content needs {need} tokens but the budget allows "
                f"{self.available} ({detail}): raise max_tokens or shorten the system prompt "
                "/ input", required=need, available=self.available)
        for tier, reason in ((Tier.P0, "pinned"), (Tier.P1, "required")):
            for s, q in self.queues.items():
                keep = []
                for u in q:
                    if u.tier == tier and (tier == Tier.P0
                                           or self.res.spent + u.cost <= self.available):
                        self.take(u, reason)
                    else:
                        keep.append(u)
                self.queues[s] = keep

    def own_shares(self) -> None:
        """3: each source into its own share (scaled down when the shares exceed the room);
        a history stops at its first unit that does not fit."""
        res = self.res
        quota = {s: max(0, self.allocation.share(s) - res.used.get(s, 0)) for s in self.queues}
        room = self.available - res.spent
        total = sum(quota.values())
        if total > room > 0:
            quota = {s: int(q * room / total) for s, q in quota.items()}
        for s, q in self.queues.items():
            left = quota.get(s, 0)
            keep = []
            for i, u in enumerate(q):
                if u.cost <= min(left, self.pool_left(s)) and \
                        res.spent + u.cost <= self.available:
                    self.take(u, "selected")
                    left -= u.cost
                elif s in self.tail:
                    keep.extend(q[i:])
                    break
                else:
                    keep.append(u)
            self.queues[s] = keep

    def leftover(self, *, cut_from: int | None) -> list[tuple[float, str, Unit]]:
        """4: the unused room flows to the best next unit of any source, within ceilings;
        returns the units that would fit only if cut (whole units first, fragments last), or
        none when ``cut_from`` is None (nothing may be cut; else the least room a cut needs).

        It stops once the room left is below every unit still queued and below ``cut_from``:
        nothing more could go in, whole or cut, and a large recall has hundreds of units left
        at that point."""
        res, available, queues = self.res, self.available, self.queues
        # Read through a position per queue, not ``pop(0)``: a recall queue holds hundreds of
        # units, and each pop moved all the rest.
        heads = dict.fromkeys(queues, 0)
        least = {s: _least_from(q) for s, q in queues.items()}  # cheapest unit from each place
        floor = math.inf if cut_from is None else cut_from  # a cut needs this much room
        stopped: set[str] = set()
        heap = [(-q[0].score, s) for s, q in queues.items() if q]
        heapq.heapify(heap)
        deferred: list[tuple[float, str, Unit]] = []
        while heap:
            _, s = heapq.heappop(heap)
            q, i = queues[s], heads[s]
            if i >= len(q) or s in stopped:
                continue
            u = q[i]
            heads[s] = i = i + 1
            if u.cost <= min(available - res.spent, self.ceiling_left(s)):
                self.take(u, "selected")
                left = available - res.spent
                if left < floor and all(left < least[t][heads[t]] for t in queues
                                        if t not in stopped):
                    break
            else:
                if cut_from is not None and not u.pinned:
                    deferred.append((u.score, s, u))
                if s in self.tail:
                    stopped.add(s)  # the tail stays contiguous: nothing older after a gap
                    continue
            if i < len(q):
                heapq.heappush(heap, (-q[i].score, s))
        for s, i in heads.items():
            if i:
                queues[s] = queues[s][i:]
        return deferred

    def cut(self, deferred: list[tuple[float, str, Unit]],
            truncate: Callable[[ContextItem, int], ContextItem | None] | None,
            min_fragment: int) -> None:
        """5: the best deferred units, cut into what is left."""
        ranked = sorted(deferred, key=itemgetter(1))  # by score, then source: no key tuples
        ranked.sort(key=itemgetter(0), reverse=True)
        for _, s, u in ranked:
            if s in self.tail and len(u.items) == 1 and u.items[0].id in self.ids \
                    and u.items[0].id not in self.res.truncated:
                # A lone message already in whole through another source (a recalled copy):
                # a cut copy would replace it (the history unit wins a duplicate, which keeps
                # a tool call's group together) and lose its text.
                continue
            room = min(self.available - self.res.spent, self.ceiling_left(s))
            # A cut history unit takes at most half the room left, so that what is older can
            # still be summarized into the rest.
            cut_room = max(min_fragment, room // 2) if s in self.tail else room
            cut = _cut_unit(u, min(room, cut_room), truncate, min_fragment)
            if cut is not None:
                originals, copy = cut
                self.res.truncated.update(originals)
                self.take(copy, "selected")


def _least_from(units: Sequence[Unit]) -> list[float]:
    """The smallest cost among ``units[i:]`` for each ``i``, and infinity past the end."""
    least = [math.inf] * (len(units) + 1)
    for i in range(len(units) - 1, -1, -1):
        least[i] = min(units[i].cost, least[i + 1])
    return least


def _cut_unit(
    u: Unit, room: float, truncate: Callable[[ContextItem, int], ContextItem | None] | None,
    min_fragment: int,
) -> tuple[dict[str, ContextItem], Unit] | None:
    """Cut the unit's largest item so the unit fits ``room``; None if it cannot be done."""
    if truncate is None or room < min_fragment or u.pinned:
        return None
    items = list(u.items)
    big = max(range(len(items)), key=lambda i: items[i].tokens or 0)
    target = int(room - (u.cost - (items[big].tokens or 0)))
    if target < min_fragment:
        return None
    cut = truncate(items[big], target)
    if cut is None or cut.tokens is None:
        return None
    originals = {items[big].id: items[big]}
    items[big] = cut
    cost = sum(it.tokens or 0 for it in items)
    if cost > room:
        return None
    return originals, Unit(items, u.source, cost, u.score, u.tier)


__all__ = ["PackResult", "Unit", "fill", "make_units", "pack"]
