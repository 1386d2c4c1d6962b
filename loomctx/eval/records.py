"""The records every evaluation data set is turned into: :class:`Turn` and :class:`EvalQuestion`.

Kept apart from the loaders so that each loader module can import them without import cycles.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any


@dataclass(frozen=True, slots=True)
class Turn:
    """One history message (or passage) a system may put in the context."""

    id: str
    """Unique within its history; gold evidence refers to it."""
    role: str
    """Chat role: ``"user"`` or ``"assistant"`` (passages are ``"user"``)."""
    content: str
    """The full text; recall needs this whole text verbatim in the context."""
    timestamp: float | None = None
    """Epoch seconds, or None when the data set has no times."""
    session: str | None = None
    """Session (or conversation part) the turn belongs to, when known."""


@dataclass(frozen=True, slots=True)
class EvalQuestion:
    """A question, the history to answer it from, and its gold evidence ids."""

    id: str
    """Question id, unique within the data set."""
    question: str
    """The question text given to the build."""
    history: tuple[Turn, ...] = field(repr=False)
    """Chronological history; the same tuple object for every question of a conversation."""
    gold: tuple[str, ...]
    """Ids of the turns holding the evidence (at least one, all present in ``history``)."""
    category: str | None = None
    """Category name for the per-category breakdown, when the data set has one."""
    extras: dict[str, Any] = field(default_factory=dict)
    """Other fields of the record (reported, never used by the systems)."""
    question_time: float | None = None
    """When the question is asked (epoch seconds), when known."""


def parse_timestamp(value: Any) -> float:
    """Epoch seconds from an int/float (epoch seconds) or an ISO 8601 string (UTC if no zone).

    Raises ``ValueError`` for anything else (bools included).
    """
    if isinstance(value, bool):
        raise ValueError(f"not a timestamp: {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        moment = datetime.fromisoformat(text)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        return moment.timestamp()
    raise ValueError(f"not a timestamp: {value!r}")


__all__ = ["EvalQuestion", "Turn", "parse_timestamp"]
