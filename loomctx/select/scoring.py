"""Scoring: relevance (BM25, CJK-aware), recency e^(−Δt/τ) and their weighted composite.

Relevance is normalised within each source (the best candidate of a source scores 1), so sources
with different raw scales compete fairly. Items without a timestamp are timeless (recency 1).
History messages are not scored for relevance: the recent tail is kept by position.
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter

from loomctx.errors import ConfigError
from loomctx.items import RAW_RELEVANCE, ContextItem
from loomctx.text.decoration import index_text
from loomctx.text.lexical import BM25Index

MMR_HEAD = 64
SCORED_KINDS = frozenset({"evidence", "tool", "skill", "state", "custom"})


@dataclass(frozen=True, kw_only=True)
class SelectOptions:
    """How candidates are scored, filtered and diversified (GSSC defaults)."""

    relevance_weight: float = 0.7
    """Weight of relevance in the composite score."""
    recency_weight: float = 0.3
    """Weight of recency in the composite score."""
    recency_tau: float = 3600.0
    """Recency time constant τ in seconds: recency = e^(−Δt/τ)."""
    min_relevance: float = 0.15
    """Evidence whose relevance, relative to the best candidate of its source, is below this is
    dropped (never history). Relative to the best, not absolute: a higher cut (0.3, the
    design's first value) left evidence out of large budgets that had room for it
    (``benchmarks/HISTORY.md``)."""
    mmr_lambda: float = 0.7
    """MMR trade-off for evidence: 1.0 = relevance only, lower = more diversity."""
    dedup: bool = True
    """Drop candidates whose content fingerprint was already seen."""
    past_recency_weight: float | None = 0.0
    """Recency weight for a question about the past (``loomctx.select.tail.about_the_past``):
    what was said recently is then no likelier to hold the answer. None: ``recency_weight``."""

    def __post_init__(self) -> None:
        names = ["relevance_weight", "recency_weight", "min_relevance", "mmr_lambda"]
        if self.past_recency_weight is not None:
            names.append("past_recency_weight")
        for name in names:
            v = getattr(self, name)
            if not (0.0 <= v <= 1.0):
                raise ConfigError(f"{name} must be in [0, 1], got {v!r}")
        if self.recency_tau <= 0:
            raise ConfigError(f"recency_tau must be > 0 seconds, got {self.recency_tau!r}")


def recency(timestamp: float | None, now: float, tau: float) -> float:
    """e^(−Δt/τ); 1.0 for timeless items and for timestamps in the future."""
    if timestamp is None:
        return 1.0
    return math.exp(-max(0.0, now - timestamp) / tau)


def composite(relevance: float, recency_: float, priority: float,
              options: SelectOptions) -> float:
    """The GSSC composite every ranked candidate is compared by: weighted relevance and
    recency, scaled by the item's own priority (0.5 .. 1)."""
    return ((options.relevance_weight * relevance + options.recency_weight * recency_)
            * (0.5 + 0.5 * priority))


def score(items: Sequence[ContextItem], query: str, now: float, options: SelectOptions) -> None:
    """Fill ``scores`` (relevance, recency, composite) of every scorable item, in place."""
    by_source: dict[str, list[ContextItem]] = defaultdict(list)
    for it in items:
        if it.kind in SCORED_KINDS:
            by_source[it.source].append(it)
    for group in by_source.values():
        raw = [it.scores.get(RAW_RELEVANCE) for it in group]
        if any(r is None for r in raw):
            if query.strip():
                index = BM25Index()
                index.add([index_text(it.content) for it in group])
                raw = [float(x) for x in index.scores(query)]
            else:
                raw = [0.0] * len(group)
        top = max((r for r in raw if r is not None), default=0.0)
        if query.strip():
            fill(group, [(r or 0.0) / top if top > 0 else 0.0 for r in raw], now, options)
        else:  # no question: fall back to the item's own importance
            fill(group, [it.priority for it in group], now, options)


def fill(items: Sequence[ContextItem], relevance: Sequence[float], now: float,
         options: SelectOptions) -> None:
    """Set each item's ``relevance`` (given), ``recency`` and ``composite`` scores.

    :func:`recency` and :func:`composite` inlined: a large build scores a thousand candidates
    and measures hundreds of history messages."""
    tau, w_rel, w_rec = options.recency_tau, options.relevance_weight, options.recency_weight
    exp = math.exp
    for it, rel in zip(items, relevance, strict=True):
        ts = it.timestamp
        rec = 1.0 if ts is None else exp(-max(0.0, now - ts) / tau)
        scores = it.scores
        scores["relevance"] = rel
        scores["recency"] = rec
        scores["composite"] = (w_rel * rel + w_rec * rec) * (0.5 + 0.5 * it.priority)


def mmr_order(
    items: Sequence[ContextItem], lam: float, terms: dict[str, frozenset[str]]
) -> list[ContextItem]:
    """Maximal marginal relevance order: λ·relevance − (1−λ)·max Jaccard to those chosen."""
    # by composite, then seq: two stable sorts, no key tuple per item
    ranked = sorted(items, key=attrgetter("seq"))
    ranked.sort(key=lambda it: it.scores.get("composite", 0.0), reverse=True)
    if lam >= 1.0 or len(ranked) < 3:
        return ranked
    # Diversify the head only: MMR is O(k²), and the tail rarely reaches the context.
    remaining, rest = ranked[:MMR_HEAD], ranked[MMR_HEAD:]
    sets = [terms[it.id] for it in remaining]
    rel = [lam * it.scores.get("composite", 0.0) for it in remaining]
    return [remaining[i] for i in _greedy(rel, sets, 1 - lam)] + rest


def _greedy(rel: list[float], sets: list[frozenset[str]], weight: float) -> list[int]:
    """The MMR order of ``0..n-1``: each step takes the largest ``rel[i] − weight·max_sim[i]``
    (the lower index on a tie), ``max_sim[i]`` being the largest Jaccard similarity between
    ``sets[i]`` and a set already taken.

    Each set is a bit mask over the candidates' terms, so an intersection is one ``&`` and a
    bit count. The keys, ``(−value, i)``, sit in a heap and are brought up to date lazily: a
    candidate's redundancy only grows, so its key only worsens as others are taken. The top
    is compared with what was taken since it was last scored; if it still tops the heap it is
    the step's exact choice (every other key is a bound it cannot beat), else it goes back.
    The order is the eager loop's (tests compare the two on random cases), in about a third
    of its time at 64 candidates.
    """
    bit: dict[str, int] = {}
    masks = []
    for terms in sets:
        mask = 0
        for term in terms:
            mask |= 1 << bit.setdefault(term, len(bit))
        masks.append(mask)
    sizes = [len(terms) for terms in sets]
    heap = [(-r, i) for i, r in enumerate(rel)]
    heapq.heapify(heap)
    max_sim = [0.0] * len(rel)
    seen = [0] * len(rel)  # how many of the taken sets max_sim[i] has been compared with
    taken: list[int] = []
    while heap:
        _, i = heap[0]
        if seen[i] < len(taken):
            a, size, best = masks[i], sizes[i], max_sim[i]
            for j in taken[seen[i]:]:
                inter = (a & masks[j]).bit_count()
                if inter:
                    sim = inter / (size + sizes[j] - inter)
                    if sim > best:
                        best = sim
            max_sim[i] = best
            seen[i] = len(taken)
            key = (-(rel[i] - weight * best), i)
            if key > heap[0]:  # worse than before: another candidate may now lead
                heapq.heapreplace(heap, key)
                continue
        heapq.heappop(heap)
        taken.append(i)
    return taken


__all__ = ["SCORED_KINDS", "SelectOptions", "composite", "fill", "mmr_order", "recency", "score"]
