"""What one build knows, in one object handed from stage to stage.

Each :meth:`~loomctx.builder.ContextBuilder.build` makes a fresh :class:`BuildState`; nothing in
it is shared with another build, and the items it ranks are per-build copies, so concurrent
builds of one session never see each other's tokens, scores or reasons.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from loomctx.budget.manager import Allocation
from loomctx.items import ContextItem


@dataclass
class Gathered:
    """One source's answer: its items (None if it failed), the error, and how long it took."""

    items: list[ContextItem] | None
    error: str | None
    elapsed_ms: float


@dataclass
class BuildState:
    """Per-build data: the request, every candidate, each decision and its reason."""

    question: str
    """What retrieval and scoring look for (the query, or the turn's last user message)."""
    turn: bool
    """A turn build: the input is the history's last user message (shown once)."""
    now: float
    allocation: Allocation
    available: int = 0
    """Tokens left for items after the format's fixed framing."""
    gathered: dict[str, Gathered] = field(default_factory=dict)
    candidates: dict[str, list[ContextItem]] = field(default_factory=dict)
    """Every candidate by source, as the source gave it (the report's rows)."""
    views: dict[tuple[str, str], ContextItem] = field(default_factory=dict)
    """(source, id) → this build's measured and scored copy of a candidate."""
    reasons: dict[str, str] = field(default_factory=dict)
    """Item id → why it is in or out (the report's closed vocabulary)."""
    unmeasured: dict[str, int] = field(default_factory=dict)
    """History source → how many of its oldest items were never measured (could not fit)."""
    window_start: dict[str, int] = field(default_factory=dict)
    """History source → index of the first item shown in full (turn builds); older ones are
    compacted."""
    included: list[ContextItem] = field(default_factory=list)
    originals: dict[str, ContextItem] = field(default_factory=dict)
    """Full originals of items that were cut, by id."""
    summary: ContextItem | None = None
    message: str | None = None
    """The question as written (``question`` is the part of it that carries its need)."""
    asks: bool = False
    """Whether the message asks (:class:`~loomctx.text.need.Need`), not only states."""
    refers: bool = True
    """Turn builds: whether the message may refer to the session's own past
    (:func:`~loomctx.text.need.refers_back`); one that does not gets none of it."""
    asked_with: str | None = None
    """The id of the user's message before the input when the question took words from it (a
    follow-up over two turns): part of what is asked, not evidence for it."""
    recall_need: float = 0.0
    """Turn builds: the share of retrieval's best candidates the history window does not show."""
    recall_said: float = 0.0
    """Turn builds: the share of retrieval's best candidates out of view that someone said (not
    a tool's output)."""
    recall_missing: frozenset[str] = frozenset()
    """Turn builds: the ids of retrieval's best candidates the history window does not show."""
    recall_own: bool = False
    """Turn builds: retrieval's best candidates include the session's own messages."""
    recall_beyond: float = 0.0
    """Turn builds: the share of retrieval's best candidates out of view that are not the
    session's own messages (knowledge, other sessions)."""
    recall_wide: bool = False
    """Turn builds: a question whose best matches are mostly out of view (its evidence is kept
    in place as a recall note)."""
    window_room: int = 0
    """Turn builds: the room of the history window (what it shows is at most this)."""
    recall_reserve: int = 0
    """Turn builds: tokens the window gave up for this turn's evidence."""
    window_new: bool = False
    """Turn builds: the window was never placed before at an earlier end of this history (no
    request sent before shares its prefix, so where it starts costs no cache)."""
    noted: dict[str, ContextItem] = field(default_factory=dict)
    """Turn builds: evidence id → the recall note of an earlier turn that shows it."""
    noted_sources: set[str] = field(default_factory=set)
    timings: dict[str, float] = field(default_factory=dict)


__all__ = ["BuildState", "Gathered"]
