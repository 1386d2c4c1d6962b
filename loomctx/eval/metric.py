"""Evidence recall at a token budget, the one number the evaluation reports.

A gold item is recalled only when its whole text is in the built context: a truncated or
summarised item does not count, and neither does a context over the budget (it scores 0). The
budget is checked here, on the rendered text, with one fixed tokenizer (cl100k_base), so a system
cannot pass by under-counting its own output.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from functools import lru_cache

from loomctx.errors import ConfigError

ENCODING = "cl100k_base"
"""The tokenizer every budget is measured in."""


@lru_cache(maxsize=1)
def _cl100k() -> Callable[[str], int]:
    """The library's exact cl100k counter (one per process)."""
    from loomctx.tokens.bpe import BPECounter

    return BPECounter(ENCODING).count


def count_tokens(text: str) -> int:
    """cl100k_base tokens of ``text`` (special-token strings counted as plain text)."""
    return _cl100k()(text)


def within_budget(context: str, budget: int) -> bool:
    """True when the rendered ``context`` is at most ``budget`` cl100k tokens."""
    return count_tokens(context) <= budget


def recall(context: str, gold_texts: Sequence[str]) -> float:
    """Share of ``gold_texts`` found verbatim in ``context``."""
    if not gold_texts:
        raise ConfigError("recall needs at least one gold text; drop questions without evidence")
    return sum(1 for text in gold_texts if text in context) / len(gold_texts)


@dataclass(frozen=True, slots=True)
class Score:
    """The score of one build."""

    recall: float
    """Share of gold items recalled (0 when over budget)."""
    tokens: int
    """cl100k tokens of the rendered context, as recounted here."""
    over_budget: bool
    """True when ``tokens`` exceeded the budget (the recall was then set to 0)."""


def score_build(
    context: str,
    included_ids: Collection[str],
    gold: Sequence[tuple[str, str]],
    budget: int,
) -> Score:
    """Score one build against ``gold`` ``(id, text)`` pairs at ``budget``.

    An item counts when the system reports its id as included *and* its whole text is in the
    context: the text check rejects truncated or summarised items, the id check rejects a short
    text ("Thanks!") that happens to occur inside another turn.
    """
    if not gold:
        raise ConfigError("score_build needs at least one gold item")
    tokens = count_tokens(context)
    if tokens > budget:
        return Score(recall=0.0, tokens=tokens, over_budget=True)
    ids = included_ids if isinstance(included_ids, (set, frozenset)) else set(included_ids)
    hits = sum(1 for gold_id, text in gold if gold_id in ids and text in context)
    return Score(recall=hits / len(gold), tokens=tokens, over_budget=False)


__all__ = ["ENCODING", "Score", "count_tokens", "recall", "score_build", "within_budget"]
