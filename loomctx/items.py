"""The unit of context: :class:`ContextItem`.

Every candidate that may reach the model — a system prompt, a history message, a tool definition,
a retrieved passage, a memory — is one item. Items are measured (``tokens``) before the packer
spends budget on them, scored during selection, and each one appears in the build report.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import IntEnum
from functools import lru_cache
from typing import Any, Literal

Kind = Literal[
    "system",  # the system prompt / instructions
    "input",  # the current user input (the task)
    "message",  # a history message (OpenAI message in ``message``)
    "tool",  # a tool definition (JSON schema in ``metadata["schema"]``)
    "skill",  # skill instructions
    "evidence",  # retrieved knowledge or memory
    "state",  # task state / agent output summaries
    "custom",  # anything else (assembler components, a user's own source): placed as evidence
]

Section = Literal["role", "tools", "task", "state", "evidence", "context", "output"]

KIND_SECTION: dict[str, Section] = {
    "system": "role",
    "skill": "role",
    "tool": "tools",
    "input": "task",
    "state": "state",
    "evidence": "evidence",
    "message": "context",
    "custom": "evidence",
}
"""The one kind → section map: the layout places an item by it and the renderers reserve their
framing by it, so the two can never disagree. ``custom`` is volatile content that is not a chat
message (it has no role to be sent with), so it goes with the evidence; ``context`` holds only
history messages."""


RAW_RELEVANCE = "raw_relevance"
"""``scores`` key where a source leaves its own relevance score (BM25, reranker...); the
selector normalises it within the source. Items without it are scored by the selector."""


class Tier(IntEnum):
    """Priority tier: P0 is pinned (never dropped), P4 is the first to go."""

    P0 = 0
    P1 = 1
    P2 = 2
    P3 = 3
    P4 = 4


def fingerprint(text: str) -> str:
    """A content fingerprint for dedup and count caching: whitespace-folded, case-kept sha1."""
    if len(text) <= _MEMO_CHARS:  # a build asks for the same candidates' a few times over
        return _fingerprint_memo(text)
    return _fingerprint(text)


_MEMO_CHARS = 4096


def _fingerprint(text: str) -> str:
    folded = " ".join(text.split())
    return hashlib.sha1(folded.encode("utf-8", "surrogatepass")).hexdigest()


_fingerprint_memo = lru_cache(maxsize=1 << 14)(_fingerprint)


@dataclass(slots=True)
class ContextItem:
    """One candidate piece of context.

    Mutable on purpose: the pipeline fills ``tokens`` (measure) and ``scores`` (select) in place;
    the identity fields (``id``, ``source``, ``content``) are never changed by the pipeline.
    """

    id: str
    """Stable id: a history message keeps the id it was added with."""
    source: str
    """Name of the source that produced it (the budget allocation key)."""
    content: str
    """Text as it will be rendered (for messages: the text content)."""
    kind: Kind = "custom"
    """What it is; decides its section in the layout."""
    role: str | None = None
    """Chat role for messages (system / user / assistant / tool)."""
    tier: Tier = Tier.P3
    """Priority tier; P0 items are pinned."""
    priority: float = 0.5
    """Importance within the tier, 0..1."""
    timestamp: float | None = None
    """Epoch seconds when the content was created, for recency."""
    group: str | None = None
    """Atomic group: items sharing a group go in or out together (tool call + results)."""
    message: dict[str, Any] | None = None
    """The provider message this item renders as (history items), e.g. with ``tool_calls``."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Free-form data carried to the report (origin, chunk position, schema...)."""
    scores: dict[str, float] = field(default_factory=dict)
    """Signals computed during selection (relevance, recency, composite...)."""
    tokens: int | None = None
    """Measured token cost in the target format (set by the pipeline)."""
    seq: int = 0
    """Chronological position within its source (history order)."""

    @property
    def section(self) -> Section:
        """Where it is laid out (:data:`KIND_SECTION`; an unknown kind counts as ``custom``)."""
        return KIND_SECTION.get(self.kind, KIND_SECTION["custom"])

    @property
    def pinned(self) -> bool:
        return self.tier == Tier.P0

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.content)


__all__ = ["KIND_SECTION", "RAW_RELEVANCE", "ContextItem", "Kind", "Section", "Tier", "fingerprint"]
