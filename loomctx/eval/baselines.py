"""Baselines (recency, BM25, dense, their rank fusion) that put loomctx's numbers in perspective.

All of them share one packer, so they differ only in how they rank turns: each turn is rendered as
one line of its ``content``, lines are taken greedily in rank order while the cl100k count of the
rendered text stays within the budget, and the chosen lines are put back in chronological order.
The per-history work (token counts, the BM25 index, turn embeddings) is cached by the identity of
the history tuple, so a conversation shared by 150 questions is indexed once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import numpy as np

from loomctx.eval.metric import count_tokens
from loomctx.eval.records import EvalQuestion, Turn
from loomctx.text.lexical import BM25Index

if TYPE_CHECKING:
    from loomctx.embed.protocol import Embedder

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class EvalOutput:
    """What one build returned: the rendered context and which history turns are in it."""

    context: str
    """The context exactly as it would be sent."""
    tokens: int
    """The system's own cl100k count of ``context`` (the metric recounts it)."""
    included_ids: tuple[str, ...]
    """Ids of the history turns whose full text the system put in ``context``."""


@runtime_checkable
class EvalSystem(Protocol):
    """A system under evaluation.

    Contract: ``run(q, budget)`` sees the whole ``q.history`` and ``q.question`` (never
    ``q.gold``), returns a context of at most ``budget`` cl100k tokens, and is deterministic.
    It may cache work per history (keyed by ``id(q.history)``, the tuple is shared).

    A system may also define ``prepare(history)``: the runner then calls it once for each new
    history, before and outside the timed builds (a fresh session ingesting the conversation),
    and reports its time apart as indexing time.
    """

    name: str

    def run(self, q: EvalQuestion, budget: int) -> EvalOutput: ...


class _HistoryCache:
    """A small LRU of per-history values keyed by ``id(history)``, safe against id reuse."""

    def __init__(self, size: int = 8) -> None:
        self._size = size
        self._entries: OrderedDict[int, tuple[tuple[Turn, ...], Any]] = OrderedDict()

    def get(self, history: tuple[Turn, ...], make: Callable[[tuple[Turn, ...]], _T]) -> _T:
        key = id(history)
        entry = self._entries.get(key)
        if entry is not None and entry[0] is history:
            self._entries.move_to_end(key)
            return entry[1]  # type: ignore[no-any-return]
        value = make(history)
        self._entries[key] = (history, value)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)
        return value


_COUNTS = _HistoryCache()


def turn_token_counts(history: tuple[Turn, ...]) -> list[int]:
    """cl100k tokens of each turn's content (cached per history)."""
    return _COUNTS.get(history, lambda h: [count_tokens(turn.content) for turn in h])


def pack_turns(history: tuple[Turn, ...], order: Sequence[int], budget: int) -> EvalOutput:
    """Render the turns ranked by ``order`` (best first) into at most ``budget`` tokens.

    Greedy first-fit on the per-line counts plus one token per newline, then the exact count of
    the rendered text; if the joins tokenised worse than that sum, the lowest-ranked lines are
    dropped until the exact count fits, so the result is always within budget.
    """
    counts = turn_token_counts(history)
    chosen: list[int] = []
    used = 0
    for index in order:
        cost = counts[index] + (1 if chosen else 0)
        if used + cost <= budget:
            chosen.append(index)
            used += cost
            if used >= budget:
                break
    while True:
        kept = sorted(chosen)
        context = "\n".join(history[i].content for i in kept)
        tokens = count_tokens(context)
        if tokens <= budget or not chosen:
            break
        chosen.pop()
    return EvalOutput(
        context=context, tokens=tokens, included_ids=tuple(history[i].id for i in kept)
    )


def _rank(scores: np.ndarray) -> list[int]:
    """Indices by score, best first; ties go to the later (more recent) turn."""
    positions = np.arange(len(scores))
    return np.lexsort((-positions, -scores)).tolist()  # type: ignore[no-any-return]


class RecencyBaseline:
    """The latest turns first: what a plain sliding window keeps."""

    name = "recency"

    def prepare(self, history: tuple[Turn, ...]) -> None:
        """Measure the turns once, outside the timed builds."""
        turn_token_counts(history)

    def run(self, q: EvalQuestion, budget: int) -> EvalOutput:
        return pack_turns(q.history, range(len(q.history) - 1, -1, -1), budget)


class _RankingBaseline:
    """Index a history once (``_build``), rank its turns per question (``_scores``), pack."""

    def __init__(self) -> None:
        self._built = _HistoryCache()

    def _build(self, history: tuple[Turn, ...]) -> Any:
        raise NotImplementedError

    def _scores(self, built: Any, question: str) -> np.ndarray:
        raise NotImplementedError

    def prepare(self, history: tuple[Turn, ...]) -> None:
        """Measure and index the turns once, outside the timed builds."""
        turn_token_counts(history)
        if history:
            self._built.get(history, self._build)

    def run(self, q: EvalQuestion, budget: int) -> EvalOutput:
        if not q.history:
            return pack_turns(q.history, [], budget)
        built = self._built.get(q.history, self._build)
        return pack_turns(q.history, _rank(self._scores(built, q.question)), budget)


class BM25Baseline(_RankingBaseline):
    """Turns ranked by BM25 against the question (the library's lexical index)."""

    name = "bm25"

    def _build(self, history: tuple[Turn, ...]) -> Any:
        index = BM25Index()
        index.add([turn.content for turn in history])
        return index

    def _scores(self, built: Any, question: str) -> np.ndarray:
        return np.asarray(built.scores(question), dtype=np.float64)


class DenseBaseline(_RankingBaseline):
    """Turns ranked by the cosine between question and turn embeddings.

    Turn vectors are cached per history (and ``embedder`` may memoise them across histories);
    the question is embedded on every build, bypassing a :class:`~loomctx.embed.CachedEmbedder`,
    so that the latency of every budget includes it, as a real build's would.
    """

    name = "dense"

    def __init__(self, embedder: Embedder) -> None:
        super().__init__()
        self.embedder = embedder
        self._query_embedder: Embedder = getattr(embedder, "inner", embedder)

    def _build(self, history: tuple[Turn, ...]) -> np.ndarray:
        return np.asarray(self.embedder.embed([turn.content for turn in history]), dtype=np.float32)

    def _scores(self, built: Any, question: str) -> np.ndarray:
        query = np.asarray(self._query_embedder.embed([question]), dtype=np.float32)[0]
        return np.asarray(built @ query)


class FusionBaseline(_RankingBaseline):
    """Reciprocal rank fusion of the BM25 and the dense ranking: ``1/(k + rank)`` summed.

    The simple hybrid that any retrieval stack can build from the two single-signal baselines;
    a context builder that ranks worse than it is leaving recall on the table. ``k`` = 60 is the
    constant of the original RRF paper (Cormack et al., 2009), not fitted to any data here.
    """

    name = "fusion"

    def __init__(self, embedder: Embedder, *, k: int = 60) -> None:
        super().__init__()
        self.k = k
        self._bm25 = BM25Baseline()
        self._dense = DenseBaseline(embedder)

    def _build(self, history: tuple[Turn, ...]) -> Any:
        return self._bm25._build(history), self._dense._build(history)

    def _scores(self, built: Any, question: str) -> np.ndarray:
        lexical, dense = built
        fused = np.zeros(len(dense), dtype=np.float64)
        for scores in (self._bm25._scores(lexical, question), self._dense._scores(dense, question)):
            ranks = np.empty(len(scores), dtype=np.float64)
            ranks[_rank(np.asarray(scores))] = np.arange(len(scores))
            fused += 1.0 / (self.k + ranks + 1.0)
        return fused


__all__ = [
    "BM25Baseline",
    "DenseBaseline",
    "EvalOutput",
    "EvalSystem",
    "FusionBaseline",
    "RecencyBaseline",
    "pack_turns",
    "turn_token_counts",
]
