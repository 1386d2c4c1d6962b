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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from loomctx.budget.manager import Allocation
from loomctx.errors import BudgetError
from loomctx.items import ContextItem, Tier


@dataclass
class Unit:
    """Items that go in or out together."""

    items: list[ContextItem]
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
    by_group: dict[tuple[str, str], Unit] = {}
    for it in items:
        c = cost(it)
        s = it.scores.get("composite", it.priority)
        if it.group is not None:
            key = (it.source, it.group)
            u = by_group.get(key)
            if u is not None:
                u.items.append(it)
                u.cost += c
                u.score = max(u.score, s)
                u.tier = min(u.tier, int(it.tier))
                continue
            u = by_group[key] = Unit([it], it.source, c, s, int(it.tier))
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
) -> PackResult:
    """Choose units under ``available`` tokens. ``ordered[source]`` is in preference order.

    Sources in ``pool`` share one ceiling, ``pool_limit`` tokens in all (a turn build caps
    what changes every turn this way)."""
    res = PackResult()

    def pool_left(s: str) -> int:
        if pool_limit is None or s not in pool:
            return available
        return pool_limit - sum(res.used.get(p, 0) for p in pool)

    queues = {s: list(units) for s, units in ordered.items()}

    included_ids: dict[str, ContextItem] = {}

    def take(u: Unit, reason: str) -> None:
        cost = u.cost
        for it in u.items:
            other = included_ids.get(it.id)
            if other is not None and u.source in tail_sources and other.source != u.source:
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
            included_ids[it.id] = it
            res.included.append(it)
            res.reasons[it.id] = "truncated" if it.id in res.truncated else reason
        res.used[u.source] = res.used.get(u.source, 0) + cost
        res.spent += cost

    # 1 + 2: pinned, then P1, out of every queue.
    pinned_cost = sum(u.cost for q in queues.values() for u in q if u.pinned)
    if pinned_cost > available:
        detail = ", ".join(f"{u.items[0].id}={u.cost}" for q in queues.values() for u in q
                           if u.pinned)
        raise BudgetError(
            f"pinned (P0) content needs {pinned_cost} tokens but the budget allows {available}"
            f" ({detail}): raise max_tokens or shorten the system prompt / input",
            required=pinned_cost, available=available,
        )
    for tier, reason in ((Tier.P0, "pinned"), (Tier.P1, "required")):
        for s, q in queues.items():
            keep = []
            for u in q:
                if u.tier == tier and (tier == Tier.P0 or res.spent + u.cost <= available):
                    take(u, reason)
                else:
                    keep.append(u)
            queues[s] = keep

    # 3: each source into its own share.
    quota = {s: max(0, allocation.share(s) - res.used.get(s, 0)) for s in queues}
    room = available - res.spent
    total_quota = sum(quota.values())
    if total_quota > room > 0:
        quota = {s: int(q * room / total_quota) for s, q in quota.items()}
    stopped: set[str] = set()
    for s, q in queues.items():
        left = quota.get(s, 0)
        keep = []
        for i, u in enumerate(q):
            if u.cost <= min(left, pool_left(s)) and res.spent + u.cost <= available:
                take(u, "selected")
                left -= u.cost
            elif s in tail_sources:
                keep.extend(q[i:])
                break
            else:
                keep.append(u)
        queues[s] = keep

    # 4: leftover flows, best next unit first, respecting ceilings and the tail rule.
    def ceiling_left(s: str) -> int:
        cap = allocation.ceilings.get(s)
        own = available if cap is None else cap - res.used.get(s, 0)
        return min(own, pool_left(s))

    heap = [(-q[0].score, s) for s, q in queues.items() if q]
    heapq.heapify(heap)
    deferred: list[tuple[float, str, Unit]] = []  # units that fit only if cut
    while heap:
        _, s = heapq.heappop(heap)
        q = queues[s]
        if not q or s in stopped:
            continue
        u = q[0]
        room = min(available - res.spent, ceiling_left(s))
        if u.cost <= room:
            take(u, "selected")
            q.pop(0)
        else:
            # Whole units first, fragments last: a unit that would need a cut waits until
            # every source has placed what fits whole.
            if truncate is not None and not u.pinned:
                deferred.append((u.score, s, u))
            q.pop(0)
            if s in tail_sources:
                stopped.add(s)  # the tail stays contiguous: nothing older after a gap
                continue
        if q and s not in stopped:
            heapq.heappush(heap, (-q[0].score, s))

    # 5: cut the best deferred units into what is left.
    for _, s, u in sorted(deferred, key=lambda d: (-d[0], d[1])):
        room = min(available - res.spent, ceiling_left(s))
        # A cut history unit takes at most half the room left, so that what is older can
        # still be summarized into the rest.
        cut_room = max(min_fragment, room // 2) if s in tail_sources else room
        cut = _cut_unit(u, min(room, cut_room), truncate, min_fragment)
        if cut is not None:
            originals, copy = cut
            res.truncated.update(originals)
            take(copy, "selected")
    return res  # anything without a reason did not fit: the report says "budget"


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


__all__ = ["PackResult", "Unit", "make_units", "pack"]
