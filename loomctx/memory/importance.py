"""Importance of a message, from signals in its text (no reliance on the LLM tagging itself).

Signals: an explicit "remember", decisions, preferences, names, numbers and dates, answers to a
question. The score is in [0, 1]; above 0.6 (``MemoryOptions.promote_threshold``) an evicted
message goes to L2. An LLM scorer can replace this through the :class:`ImportanceScorer` protocol.
"""

from __future__ import annotations

import re
from typing import Protocol, runtime_checkable

from loomctx.text.sample import sample

_RULES: tuple[tuple[re.Pattern[str], float], ...] = tuple(
    (re.compile(p, re.IGNORECASE), w) for p, w in (
        (r"\bremember\b|\bdon'?t forget\b|\bnote that\b|\bkeep in mind\b|记住|别忘|请注意", 0.45),
        (r"\bdecid|\bagreed?\b|\bwe will\b|\bwe'll\b|\bplan(?:ned)? to\b|\bgoing to\b"
         r"|决定|打算|计划", 0.25),
        (r"\bprefer|\bfavou?rite\b|\bi (?:love|like|hate|enjoy)\b|\balways\b|\bnever\b"
         r"|喜欢|讨厌|偏好|总是|从不", 0.2),
        (r"\b\d{1,4}(?:[:/.-]\d{1,4})*\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*"
         r"\b|\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b|[年月日号点]",
         0.15),
        (r"@|\bhttps?://|\b[\w.-]+@[\w.-]+\.\w+\b", 0.1),
        (r"\bmy (?:name|wife|husband|son|daughter|friend|boss|job|birthday|address)\b"
         r"|我的|我叫", 0.2),
    )
)
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]{2,}\b")


@runtime_checkable
class ImportanceScorer(Protocol):
    """Rates how worth keeping a message is, 0..1 (deterministic for the same input)."""

    def score(self, text: str, *, role: str | None = None) -> float: ...


class HeuristicImportance:
    """Signal-based importance: base 0.2 plus the weights of the signals present (looked for in
    a very long text's bounded :func:`~loomctx.text.sample.sample`)."""

    def score(self, text: str, *, role: str | None = None) -> float:
        text = sample(text)
        value = 0.2
        for pattern, weight in _RULES:
            if pattern.search(text):
                value += weight
        if _NAME.search(text):
            value += 0.1
        if len(text) < 12:
            value -= 0.1
        return max(0.0, min(1.0, value))


__all__ = ["HeuristicImportance", "ImportanceScorer"]
