"""UnifiedReranker: one score for candidates recalled from memory and knowledge bases.

Signals and their default weights: vector similarity .40, query-term overlap .35, origin
diversity .15, content length .10 (the design's starting point, docs/seed-differences.md) — plus
reciprocal-rank fusion of the lexical and dense recall lists (weight
``fusion``), which measurably helps on long-conversation recall. A question whose terms are rare
among the candidates (names, numbers, titles: high :func:`specificity`) trusts the fused ranking
more (``lexical_trust``), because there the lexical list finds what the vector misses. A
candidate whose label the question names (the speaker of a transcript line, the title of a
passage) gets a small bonus (``named``), and so does a message the user wrote when the question
is the user's about themselves (``voice``). Duplicates (same fingerprint) keep the higher vector
score.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from itertools import islice, repeat
from operator import attrgetter, contains, gt

from loomctx.errors import ConfigError
from loomctx.items import fingerprint
from loomctx.text.labels import label_terms
from loomctx.text.lexical import bm25_idf, term_set, tokenize


@dataclass(slots=True)
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
    adjacent_to: tuple[str, ...] = ()
    """Ids of recalled candidates this one is a conversation neighbour of (it is the reply to
    one of them, or what one of them replied to); it inherits a share of their fusion credit."""
    role: str | None = None
    """Who wrote it (``user``, ``assistant``, …); None for a knowledge base's passage."""
    tokens: int = 0
    score: float = 0.0
    signals: dict[str, float] = field(default_factory=dict)
    payload: object = None
    """What the caller needs to turn the candidate back into an item."""


@dataclass(frozen=True, kw_only=True)
class RerankWeights:
    """Weights of the reranker's signals: four single signals plus rank fusion."""

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
    named: float = 0.10
    """Bonus for a candidate whose label the question names (:func:`label_terms`: the speaker
    of a transcript line, the title of a passage). Fitted on the development split: a question
    that names one speaker of a conversation has 96 % of its evidence in that speaker's lines."""
    voice: float = 0.5
    """Bonus for a candidate written by the role the question speaks of (:func:`voice`): a user
    who asks about themselves ("Where did I stay in Hawaii?") told it in their own messages; the
    assistant's replies on the same topic repeat its words at greater length and would take the
    room of the message that holds the fact."""
    adjacent: float = 1.0
    """Share of a candidate's rank-fusion credit that its conversation neighbours inherit
    (``Candidate.adjacent_to``), added to their own. At most 1: a neighbour recalled by no
    list of its own never gets more fusion credit than what it neighbours."""
    lexical_trust: float = 4.0
    """How far a question with rare terms moves weight to the fused (lexical) ranking: the fusion
    weight is multiplied by ``1 + lexical_trust * r``, where ``r`` rises from 0 at a
    :func:`specificity` of ``trust_floor`` to 1 at a specificity of 1."""
    trust_floor: float = 0.65
    """Specificity below which a question gets no extra lexical trust (in [0, 1))."""
    rrf_k: int = 10
    """RRF constant k in 1 / (k + rank). The fusion signal is normalised by the best candidate's,
    so k sets how much the top ranks stand out: with 60, rank 10 keeps 0.87 of rank 1's signal
    (nearly flat: the signal hardly orders anything); with 10, 0.53. Fitted on the development
    split (``benchmarks/HISTORY.md``)."""
    length_tokens: int = 24
    """Token length at which the length signal reaches 1."""
    list_weights: dict[str, float] = field(
        default_factory=lambda: {"lexical": 1.0, "dense": 1.0, "expanded": 0.5, "time": 3.0,
                                 "bridge": 1.5})
    """Weight of each recall list in the rank fusion (unknown lists weigh 1). ``time`` is the
    list of memories from the period a question names: with ``rrf_k`` 10 it must outweigh a
    memory that tops both other lists (3.0 fitted on the development split). ``bridge`` is the
    question searched again with the names its best match adds (1.5, fitted likewise)."""

    def __post_init__(self) -> None:
        # NaN passes a plain ``< 0`` check and would turn every score into NaN.
        weights = {name: getattr(self, name)
                   for name in ("vector", "overlap", "diversity", "length", "fusion",
                                "named", "voice", "adjacent", "lexical_trust")}
        weights.update({f"list_weights[{k!r}]": v for k, v in self.list_weights.items()})
        for name, value in weights.items():
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise ConfigError(f"weight {name} must be a finite number >= 0, got {value!r}")
        if self.adjacent > 1.0:
            raise ConfigError(f"weight adjacent must be in [0, 1], got {self.adjacent!r}")
        if not 0.0 <= self.trust_floor < 1.0:
            raise ConfigError(f"trust_floor must be in [0, 1), got {self.trust_floor!r}")
        for name in ("rrf_k", "length_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be an int >= 1, got {value!r}")


# "I", "I'm" are capitalised in English; the other forms may start a sentence.
_FIRST_PERSON = re.compile(r"\bI\b|\b(?i:me|my|mine|myself)\b|我")
_SECOND_PERSON = re.compile(r"\b(?i:you|your|yours|yourself|yourselves)\b|你|您")


def voice(question: str) -> str | None:
    """The role whose own messages a question is about, or None when it does not say.

    A question in the first person that does not address anyone ("How long have I lived in my
    apartment?") asks the user's own account: ``"user"``. One that names "you" may ask what the
    assistant said ("what did you recommend?") or ask it to act ("can you suggest…?"), and a
    question in the third person ("What did Caroline research?") names no role: None.
    """
    if _SECOND_PERSON.search(question) or not _FIRST_PERSON.search(question):
        return None
    return "user"


def diversity_origin(origin: str) -> str:
    """The origin the diversity bonus counts: a knowledge base, or memory whatever its tier.

    A memory's tier (``memory:L1`` … ``memory:L4``) says how important or old it is, not where it
    came from; counting tiers as origins lifted the best L2 and L4 memory over better L1
    evidence.
    """
    return "memory" if origin.startswith("memory:") else origin


def specificity(q_terms: AbstractSet[str], docs: Sequence[AbstractSet[str]]) -> float:
    """How rare the question's terms are among the candidates, in [0, 1].

    The mean, over the question's content terms found in at least one candidate, of their BM25
    idf in the candidate pool divided by the idf of a term found once. Names, numbers and titles
    occur in few candidates (near 1); a question whose terms recur everywhere (a speaker's name
    in a conversation) is near 0. Terms no candidate has say nothing about the pool and are left
    out; no such term gives 0.
    """
    n = len(docs)
    if n == 0 or not q_terms:
        return 0.0
    top = bm25_idf(n, 1)
    if top <= 0.0:
        return 0.0
    idfs = []
    for t in q_terms:
        df = sum(map(contains, docs, repeat(t)))  # counted in C: a thousand candidates
        if df:
            idfs.append(bm25_idf(n, df) / top)
    return sum(idfs) / len(idfs) if idfs else 0.0


def _best_first(cands: Sequence[Candidate]) -> list[Candidate]:
    """Highest score first, ties by id: two stable sorts (the second one reversed keeps ties
    in id order) instead of a ``(-score, id)`` tuple per candidate, a thousand new objects
    per sort for the garbage collector to count."""
    out = sorted(cands, key=attrgetter("id"))
    out.sort(key=attrgetter("score"), reverse=True)
    return out


def _credit(ranks: Mapping[str, int], lists: Mapping[str, float], k: float) -> float:
    """Reciprocal-rank fusion over a candidate's ranks, summed in their order (a plain loop: a
    build sums a thousand, and a comprehension per candidate cost more than its sum)."""
    credit = 0.0
    for kind, r in ranks.items():
        credit += lists.get(kind, 1.0) / (k + r)
    return credit


class UnifiedReranker:
    """Scores and orders candidates; deterministic (ties by id)."""

    def __init__(self, weights: RerankWeights | None = None) -> None:
        self.weights = weights or RerankWeights()

    def fusion_credit(self, ranks: Mapping[str, int]) -> float:
        """Reciprocal-rank fusion of a candidate's ranks in the recall lists (list-weighted)."""
        return _credit(ranks, self.weights.list_weights, self.weights.rrf_k)

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
                keep.adjacent_to = tuple(dict.fromkeys((*keep.adjacent_to, *drop.adjacent_to)))
                best[fp] = keep
        return list(best.values())

    def rerank(self, query: str, candidates: Sequence[Candidate]) -> list[Candidate]:
        w = self.weights
        cands = self.dedup(candidates)
        if not cands:
            return []
        q_terms = set(tokenize(query, drop_stopwords=True))
        # Where every candidate has one role (documents, a monologue) the voice orders nothing.
        role = voice(query) if w.voice and len({c.role for c in cands}) > 1 else None
        top_vec = max((c.vector for c in cands), default=0.0) or 1.0
        lists, k = w.list_weights, w.rrf_k  # looked up once for a thousand candidates
        own = {c.id: _credit(c.ranks, lists, k) for c in cands}
        rrf = [own[c.id] + w.adjacent * max((own[p] for p in c.adjacent_to if p in own),
                                            default=0.0)
               if c.adjacent_to else own[c.id] for c in cands]
        top_rrf = max(rrf) or 1.0
        docs = [term_set(c.content) for c in cands]
        fusion = w.fusion
        if w.lexical_trust:
            ramp = (specificity(q_terms, docs) - w.trust_floor) / (1.0 - w.trust_floor)
            fusion *= 1.0 + w.lexical_trust * min(1.0, max(0.0, ramp))
        n_terms = len(q_terms)
        w_vector, w_overlap, w_length, w_named, w_voice = (w.vector, w.overlap, w.length,
                                                           w.named, w.voice)
        length_tokens = w.length_tokens
        for c, terms, credit in zip(cands, docs, rrf, strict=True):
            # max(0, v) and min(1, x) as comparisons: the same values, no call per candidate
            v = c.vector
            vector = (v if v > 0.0 else 0.0) / top_vec
            overlap = len(q_terms & terms) / n_terms if n_terms else 0.0
            if c.tokens:
                length = c.tokens / length_tokens
                if not length < 1.0:
                    length = 1.0
            else:
                length = 0.5
            fused = credit / top_rrf
            named = 1.0 if w_named and (label := label_terms(c.content)) and label <= q_terms \
                else 0.0
            spoken = 1.0 if role is not None and c.role == role else 0.0
            c.signals = {"vector": vector, "overlap": overlap, "length": length,
                         "fusion": fused, "named": named, "voice": spoken}
            c.score = (w_vector * vector + w_overlap * overlap + w_length * length
                       + fusion * fused + w_named * named + w_voice * spoken)
        ordered = _best_first(cands)
        seen: dict[str, int] = {}
        w_diversity = w.diversity
        for c in ordered:  # origin diversity: first of each origin gets the full bonus
            origin = diversity_origin(c.origin)
            n = seen.get(origin, 0)
            c.signals["diversity"] = bonus = 1.0 / (1 + n)
            c.score += w_diversity * bonus
            seen[origin] = n + 1
        # One origin (a session's memories) gets ever smaller bonuses down the order, which
        # mostly keeps it: then there is nothing to sort, and no tie for the ids to break.
        scores = [c.score for c in ordered]
        if all(map(gt, scores, islice(scores, 1, None))):
            return ordered
        return _best_first(ordered)


__all__ = ["Candidate", "RerankWeights", "UnifiedReranker", "diversity_origin", "label_terms",
           "specificity", "voice"]
