"""How much of a question build the recent tail may claim by position.

A question that is not in the history ("When did Mel paint a sunrise?") is answered from memory;
the last few turns are worth their tokens only if they are about it. At a large budget a recent
tail costs a small share and keeps the build coherent; at a small budget the same share is most of
the room retrieval needed. So in a question build about the past the tail's share scales with the
budget — ``share × min(1, total / full_at)`` — and whatever the tail does not claim by position its
units can still win on their score (query-term overlap and recency) in the leftover, like any
other candidate: the tail's cost is counted against its value, not reserved in advance.

A question about the present or the future ("what should I do next?", "接下来应该做什么？") keeps
the full share: there the recent turns are the context. Every other question is taken to be about
the past — a question build asks what is not in the recent turns. Tense is not the test: Chinese
marks none ("老白领养的狗叫什么名字？"), and a first version that looked for past-tense words kept
the whole tail for such questions and lost recall in Chinese only.
"""

from __future__ import annotations

import re

_PRESENT = re.compile(
    r"\b(?:now|next|currently|right now|should|will|going to|plan|todo|continue)\b"
    r"|现在|接下来|下一步|应该|将要|打算|继续",
    re.IGNORECASE,
)


def about_the_past(question: str) -> bool:
    """True unless ``question`` asks about now or what comes next (or is empty)."""
    return bool(question.strip()) and not _PRESENT.search(question)


def tail_share_scale(question: str, total: int, full_at: int) -> float:
    """The factor on the tail's share in a question build: below 1 only for a question about
    the past at a budget under ``full_at`` tokens (0 disables the scaling)."""
    if full_at <= 0 or total >= full_at or not question.strip():
        return 1.0
    if not about_the_past(question):
        return 1.0
    return total / full_at


__all__ = ["about_the_past", "tail_share_scale"]
