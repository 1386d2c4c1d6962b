"""Recall floors: the seed's ``min_score`` (memory) and ``min_relevance`` (knowledge) filters.

The seed's unified retrieval filters at recall: the L4 semantic search drops memories whose
similarity to the query is below ``min_score``, the knowledge-base query drops passages below
``min_relevance``. Here a recalled item under its floor is *marked*, not dropped, where it is
recalled (:func:`mark_memory` after memory recall, :func:`mark_knowledge` in a
:class:`~loomctx.sources.knowledge.KnowledgeSource`); the select stage leaves every marked item
out (:func:`below`) with the reason ``below_min_score`` or ``below_min_relevance``, so the report
names what a floor removed instead of it silently never having been a candidate.

Scales: a memory's score is its cosine similarity to the query (the embedder's, in [-1, 1]);
a passage's relevance is its BM25 score divided by the best one that knowledge base returned
for the query (in (0, 1]; BM25 has no absolute scale).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from loomctx.errors import ConfigError
from loomctx.items import ContextItem

FLOOR = "below_floor"
"""Metadata key of a marked item; its value names the floor (``min_score``, ``min_relevance``)."""
SIMILARITY = "similarity"
"""Score key of a recalled memory's cosine similarity to the query."""
RELEVANCE = "relevance"
"""Metadata key of a knowledge passage's relevance (BM25 / the query's best)."""


def check_floor(name: str, value: float | None, low: float, high: float) -> None:
    """A floor is None (off) or a finite number in [low, high]; else a ConfigError."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
            value) or not low <= value <= high:
        raise ConfigError(f"{name} must be None (off) or a number in [{low:g}, {high:g}], "
                          f"got {value!r}")


def mark_memory(items: list[ContextItem], min_score: float | None) -> list[ContextItem]:
    """Mark the recalled memories whose similarity is below ``min_score`` (None: none)."""
    if min_score is None:
        return items
    for it in items:
        if str(it.metadata.get("origin", "")).startswith("memory:") and \
                it.scores.get(SIMILARITY, 1.0) < min_score:
            it.metadata = {**it.metadata, FLOOR: "min_score"}
    return items


def mark_knowledge(items: list[ContextItem], scores: Sequence[float],
                   min_relevance: float | None) -> list[ContextItem]:
    """With a floor (``min_relevance`` not None), record each passage's relevance (its score
    over the best of ``scores``) and mark those below it."""
    if min_relevance is None:
        return items
    best = max(scores, default=0.0)
    for it, score in zip(items, scores, strict=True):
        relevance = score / best if best > 0 else 0.0
        it.metadata[RELEVANCE] = relevance
        if relevance < min_relevance:
            it.metadata[FLOOR] = "min_relevance"
    return items


def below(item: ContextItem) -> str | None:
    """The report reason of a marked item (``below_min_score`` …), or None."""
    floor = item.metadata.get(FLOOR)
    return f"below_{floor}" if floor else None


__all__ = ["FLOOR", "RELEVANCE", "SIMILARITY", "below", "check_floor", "mark_knowledge",
           "mark_memory"]
