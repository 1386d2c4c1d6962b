"""UnifiedReranker: one score for candidates recalled from memory and knowledge bases.

Seed signals and weights: vector similarity .40, query-term overlap .35, origin diversity .15,
content length .10 — plus reciprocal-rank fusion of the lexical and dense recall lists (weight
``fusion``), which measurably helps on long-conversation recall. Duplicates (same fingerprint)
keep the higher vector score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from loomctx.errors import ConfigError
from loomctx.items import fingerprint
from loomctx.text.lexical import tokenize


@dataclass
class Candidate:
    """A recalled candidate before reranking."""

    id: str
    content: str
    origin: str
    """Where it was recalled from (e.g. ``memory:L4``, ``knowledge:docs``)."""
    vector: float = 0.0
    """Cosine similarity to the query (0 when unknown)."""
    ranks: dict[str, int] = field(default_factory=dict)
    """Rank in each recall list (``lexical``, ``dense``), 0-based."""
    tokens: int = 0
    score: float = 0.0
    signals: dict[str, float] = field(default_factory=dict)
    payload: object = None
    """What the caller needs to turn the candidate back into an item."""


@dataclass(frozen=True, kw_only=True)
class RerankWeights:
    """Weights of the reranker's signals (the seed's four plus rank fusion)."""

    vector: float = 0.40
    """Cosine similarity to the query."""
    overlap: float = 0.35
    """Share of the query's content terms found in the candidate."""
    diversity: float = 0.15
    """Bonus for origins not yet represented higher in the ranking."""
    length: float = 0.10
    """Preference for candidates with enough substance (saturates at ``length_tokens``)."""
    fusion: float = 0.60
    """Reciprocal-rank fusion of the lexical and dense recall lists."""
    rrf_k: int = 60
    """RRF constant k in 1 / (k + rank)."""
    length_tokens: int = 24
    """Token length at which the length signal reaches 1."""
    list_weights: dict[str, float] = field(
        default_factory=lambda: {"lexical": 1.0, "dense": 1.0, "expanded": 0.5})
    """Weight of each recall list in the rank fusion (unknown lists weigh 1)."""

    def __post_init__(self) -> None:
        # NaN passes a plain ``< 0`` check and would turn every score into NaN.
        weights = {name: getattr(self, name)
                   for name in ("vector", "overlap", "diversity", "length", "fusion")}
        weights.update({f"list_weights[{k!r}]": v for k, v in self.list_weights.items()})
        for name, value in weights.items():
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise ConfigError(f"weight {name} must be a finite number >= 0, got {value!r}")
        for name in ("rrf_k", "length_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be an int >= 1, got {value!r}")


class UnifiedReranker:
    """Scores and orders candidates; deterministic (ties by id)."""

    def __init__(self, weights: RerankWeights | None = None) -> None:
        self.weights = weights or RerankWeights()

    def dedup(self, candidates: Sequence[Candidate]) -> list[Candidate]:
        best: dict[str, Candidate] = {}
        for c in candidates:
            fp = fingerprint(c.content)
            other = best.get(fp)
            if other is None:
                best[fp] = c
            else:
                keep, drop = (c, other) if c.vector > other.vector else (other, c)
                for k, r in drop.ranks.items():
                    keep.ranks[k] = min(r, keep.ranks.get(k, r))
                best[fp] = keep
        return list(best.values())

    def rerank(self, query: str, candidates: Sequence[Candidate]) -> list[Candidate]:
        w = self.weights
        cands = self.dedup(candidates)
        if not cands:
            return []
        q_terms = set(tokenize(query, drop_stopwords=True))
        top_vec = max((c.vector for c in cands), default=0.0) or 1.0
        rrf = {c.id: sum(w.list_weights.get(k, 1.0) / (w.rrf_k + r) for k, r in c.ranks.items())
               for c in cands}
        top_rrf = max(rrf.values()) or 1.0
        for c in cands:
            terms = set(tokenize(c.content, drop_stopwords=True))
            overlap = len(q_terms & terms) / len(q_terms) if q_terms else 0.0
            c.signals = {
                "vector": max(0.0, c.vector) / top_vec,
                "overlap": overlap,
                "length": min(1.0, c.tokens / w.length_tokens) if c.tokens else 0.5,
                "fusion": rrf[c.id] / top_rrf,
            }
            c.score = (w.vector * c.signals["vector"] + w.overlap * overlap
                       + w.length * c.signals["length"] + w.fusion * c.signals["fusion"])
        ordered = sorted(cands, key=lambda c: (-c.score, c.id))
        seen: dict[str, int] = {}
        for c in ordered:  # origin diversity: first of each origin gets the full bonus
            n = seen.get(c.origin, 0)
            c.signals["diversity"] = 1.0 / (1 + n)
            c.score += w.diversity * c.signals["diversity"]
            seen[c.origin] = n + 1
        return sorted(ordered, key=lambda c: (-c.score, c.id))


__all__ = ["Candidate", "RerankWeights", "UnifiedReranker"]
