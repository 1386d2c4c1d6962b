"""Ranking candidates into units: the history tail by position, everything else by score.

Sources hand out items they may reuse across builds (a session's history is built once per
message). A build never writes into them: it ranks :func:`per_build` copies, so two builds of one
session can run at the same time without one seeing the other's tokens or scores.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from typing import overload

from loomctx.items import ContextItem
from loomctx.select.packer import Unit, make_units
from loomctx.select.scoring import SelectOptions, fill, mmr_order
from loomctx.sources.floors import below
from loomctx.text.lexical import term_set, tokenize

Cost = Callable[[ContextItem], int]


def per_build(i: ContextItem) -> ContextItem:
    """A copy this build may score and measure (the source's item stays untouched).

    Positional on purpose: five times faster than ``dataclasses.replace`` on the hot path
    (every measured history message of every build); ``test_per_build_copies_every_field``
    keeps it in step with the fields."""
    return ContextItem(i.id, i.source, i.content, i.kind, i.role, i.tier, i.priority,
                       i.timestamp, i.group, i.message, i.metadata, dict(i.scores), i.tokens,
                       i.seq)


def tail_units(items: Sequence[ContextItem], available: int, query: str, now: float,
               options: SelectOptions, cost: Cost) -> tuple[list[Unit], int]:
    """Newest-first units of a history; stops measuring once they cannot fit any budget.

    Returns the units (per-build copies) and how many of the oldest items were left unmeasured:
    one unmeasured unit stands for them at the end of the queue. Within its own share the tail
    is packed by position; beyond it, its units compete for the leftover with the composite of
    their query-term overlap and recency.
    """
    measured: list[ContextItem] = []
    spent = 0
    i = len(items) - 1
    while i >= 0 and spent <= available:
        it = per_build(items[i])
        spent += cost(it)
        measured.append(it)
        i -= 1
    if i >= 0 and items[i].group is not None:  # finish the group that straddles the cut
        while i >= 0 and items[i].group == measured[-1].group:
            it = per_build(items[i])
            cost(it)
            measured.append(it)
            i -= 1
    q_terms = set(tokenize(query, drop_stopwords=True))
    n = len(q_terms)
    # Query-term overlap: cheap (tokenization is memoised) and bounded by the budget.
    fill(measured, [len(q_terms.intersection(term_set(it.content))) / n if n else 0.0
                    for it in measured], now, options)
    units = make_units(list(reversed(measured)), cost)
    units.reverse()
    if i >= 0:  # the rest cannot fit: one unmeasured unit stands for them in the queue
        rest = _Oldest(items, i + 1)
        units.append(Unit(rest, items[0].source, available + 1, 0.0, int(items[0].tier)))
    return units, i + 1


class _Oldest(Sequence[ContextItem]):
    """The first ``n`` items of a history, read in place: the unmeasured rest of a 100k history
    is seldom read (it never fits), and a copy per build is a 100k list the garbage collector
    walks twice."""

    __slots__ = ("_items", "_n")

    def __init__(self, items: Sequence[ContextItem], n: int) -> None:
        self._items = items
        self._n = n

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, k: int) -> ContextItem: ...
    @overload
    def __getitem__(self, k: slice) -> Sequence[ContextItem]: ...

    def __getitem__(self, k: int | slice) -> ContextItem | Sequence[ContextItem]:
        if isinstance(k, slice):
            return list(self._items[: self._n])[k]
        if not -self._n <= k < self._n:
            raise IndexError(k)
        return self._items[k % self._n]

    def __iter__(self) -> Iterator[ContextItem]:
        return islice(self._items, self._n)


def window_items(items: Sequence[ContextItem], cost: Cost,
                 tokens: Sequence[int] | None = None) -> list[ContextItem]:
    """A history window placed whole (turn builds): per-build copies, measured (or given
    their ``tokens``, what ``cost`` measured already), in order, the members of a group right
    after its first one (as :func:`make_units` holds them). The window is placed whole, so no
    unit is made: a turn's window is most of its messages."""
    runs: list[list[ContextItem]] = []
    groups: dict[tuple[str, str], list[ContextItem]] = {}
    for k, it in enumerate(items):
        copy = per_build(it)
        if tokens is None:
            cost(copy)
        else:
            copy.tokens = tokens[k]
        if copy.group is None:
            runs.append([copy])
            continue
        members = groups.get((copy.source, copy.group))
        if members is None:
            runs.append(groups.setdefault((copy.source, copy.group), [copy]))
        else:
            members.append(copy)
    return [it for run in runs for it in run]


class _Terms(dict[str, frozenset[str]]):
    """Items' search terms by id, worked out when first asked for: the diversity order reads
    only its head's (``MMR_HEAD``), of the hundreds of candidates a large budget recalls."""

    def __init__(self, items: Sequence[ContextItem]) -> None:
        super().__init__()
        self._texts = {it.id: it.content for it in items}

    def __missing__(self, key: str) -> frozenset[str]:
        terms = self[key] = term_set(self._texts[key])
        return terms


def rank_units(items: Sequence[ContextItem], query: str, options: SelectOptions, cost: Cost,
               reasons: dict[str, str]) -> list[Unit]:
    """Scored items in preference order; evidence below ``min_relevance`` is left out, and
    so is what a recall floor marked (:mod:`loomctx.sources.floors`)."""
    kept = []
    asked, floor = bool(query.strip()), options.min_relevance
    for it in items:
        if it.metadata and (marked := below(it)) is not None and not it.pinned:
            reasons[it.id] = marked
            cost(it)
        elif (asked and it.kind == "evidence" and not it.pinned
                and it.scores.get("relevance", 0.0) < floor):
            reasons[it.id] = "low_relevance"
            cost(it)
        else:
            kept.append(it)
    if kept and kept[0].kind == "evidence":
        kept = mmr_order(kept, options.mmr_lambda, _Terms(kept))
    else:
        kept.sort(key=lambda it: (-it.scores.get("composite", it.priority), it.seq))
    return make_units(kept, cost)


__all__ = ["per_build", "rank_units", "tail_units", "window_items"]
