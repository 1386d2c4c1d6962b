"""Build options: how a builder renders, selects and lays out history (frozen, validated)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from loomctx.errors import ConfigError
from loomctx.render.placement import PLACEMENTS, Placement
from loomctx.render.registry import formats
from loomctx.select.scoring import SelectOptions


@dataclass(frozen=True, kw_only=True)
class BuildOptions:
    """How a builder renders and selects."""

    model: str = "gpt-4o"
    """Target model: decides the tokenizer and the context window."""
    format: str | None = None
    """Output format (a registered name); None picks the model's provider's format."""
    placement: Placement | None = None
    """Where the turn's context (evidence, state), recall notes and the history summary go in
    chat formats (:mod:`loomctx.render.placement`): ``"system"`` (system messages mid-
    conversation), ``"first_system"`` (joined into the first system message) or
    ``"user_block"`` (user-side text in the user's turn). None: the format's default —
    ``"system"`` for openai, ``"user_block"`` for anthropic and for ``openai_strict`` (a local
    server whose chat template allows one leading system message and alternating roles)."""
    fallback_encoding: str | None = None
    """Encoding to use when ``model`` is unknown (explicit opt-in, e.g. "cl100k_base")."""
    template: str | None = None
    """Template text for ``format="template"``."""
    text_order: Literal["cache", "gssc"] = "cache"
    """Section order of the text format."""
    text_style: Literal["plain", "seed"] = "plain"
    """The text formats' structure: "seed" (the labelled structure of the design this project
    grew from, docs/seed-differences.md) adds a label line under each section header,
    ``[来源: …]`` tags on evidence, so an answer can cite its sources, and a default
    ``[Output]`` answer format."""
    text_language: Literal["zh", "en"] = "zh"
    """Language of the "seed" style's labels, tags and default output instruction."""
    chat_style: Literal["plain", "seed"] = "plain"
    """The chat formats' turn-context block (state and evidence): "seed" gives it the seed's
    labels and a ``[来源: …]`` tag before each piece of evidence, as ``text_style="seed"``
    does for text (:mod:`loomctx.render.seed_chat`), in ``text_language``."""
    text_overflow: Literal["drop", "sections"] = "drop"
    """When the candidates are over budget: drop the weakest whole units ("drop"; the pinned
    input is never cut), or, as the seed's compressor does, pack up to twice the room and cut
    the text by section, [Context] first and the instructions never, halving a section before
    deleting it and marking each cut ("sections"; a pasted input over the budget is halved
    instead of refused). docs/seed-differences.md has both measured."""
    output_instructions: str = ""
    """Text for the [Output] part (stable)."""
    source_timeout: float = 5.0
    """Seconds each source may take before it is reported as timed out."""
    select: SelectOptions = field(default_factory=SelectOptions)
    """Scoring, filtering and diversity options."""
    summarize_history: bool = True
    """Summarize history that is left out (compacted or dropped) into a block."""
    min_fragment: int = 64
    """Smallest useful truncated fragment, in tokens."""
    low_water: float = 0.5
    """Turn builds: after a compaction step the history window is about this share of the
    room it may use, so the following turns only append."""
    volatile_share: float = 0.05
    """Turn builds: most of the budget that per-turn content (retrieved evidence, state) may
    take; it changes every turn, so it is never cached."""
    tool_share: float = 0.03
    """Turn builds: most of the budget the session's own past may take as evidence while tools
    are at work (at most ``volatile_share``), times the share of retrieval's best matches out of
    view. Evidence that holds all of those stays in place for the next steps (a recall note);
    the rest sits at each request's end and is sent again on every tool step; the agent's
    working state is in its window and its tools. Chosen on the cache replays' development
    seeds: of the shares tried, the lowest at which no planted fact asked as a turn was lost
    (``docs/architecture.md``)."""
    tool_output_share: float = 0.0625
    """Turn builds: a tool's output larger than this share of the history window's room is
    shown cut, its head and its last lines, the same way on every request (any other message:
    past a quarter; a tool's output keeps at least 192 tokens while a message's cut holds
    them). The output stays whole in the store (the report's ``truncated``, the
    build's ``originals``) and the tool can be called again, while an output shown whole
    fills the window and brings the next compaction, a request sent anew, nearer. 1/16 (at
    16k about 860 tokens, at 128k about 7,000) was chosen on the cache replays' development
    seeds (``benchmarks/HISTORY.md``); raise it when the model must read long outputs whole."""
    recall_share: float = 0.8
    """Turn builds: most of the budget a question's new evidence may take from the history
    window (scaled by the share of retrieval's best matches out of view) once most of the
    latest user turns asked about what is out of view; the window then compacts to make the
    room. 0 keeps the window whole."""
    summary_share: float = 0.08
    """Turn builds: most of the budget the summary of compacted history may take."""
    tail_full_at: int = 8192
    """Question builds about the past: below this budget the recent tail's share shrinks in
    proportion (``share × total / tail_full_at``) and the rest of the tail competes on its
    score; 0 keeps the full share at every budget (see :mod:`loomctx.select.tail`). 8192 was
    chosen on the development split (``benchmarks/HISTORY.md``)."""

    def __post_init__(self) -> None:
        if self.format is not None and self.format not in formats():
            raise ConfigError(f"format must be one of {list(formats())!r} (or a format "
                              f"registered with register_format), got {self.format!r}")
        if self.placement is not None and self.placement not in PLACEMENTS:
            raise ConfigError(f"placement must be one of {list(PLACEMENTS)!r} or None (the "
                              f"format's default), got {self.placement!r}")
        if self.format == "template" and not self.template:
            raise ConfigError("format='template' needs template='... {{task}} ...'")
        for name, allowed in (("text_order", ("cache", "gssc")), ("text_style", ("plain", "seed")),
                              ("chat_style", ("plain", "seed")),
                              ("text_language", ("zh", "en")),
                              ("text_overflow", ("drop", "sections"))):
            if getattr(self, name) not in allowed:
                raise ConfigError(f"{name} must be one of {list(allowed)!r}, got "
                                  f"{getattr(self, name)!r}")
        if self.source_timeout <= 0:
            raise ConfigError(f"source_timeout must be > 0, got {self.source_timeout!r}")
        if self.min_fragment < 1:
            raise ConfigError(f"min_fragment must be >= 1, got {self.min_fragment!r}")
        if isinstance(self.tail_full_at, bool) or not isinstance(self.tail_full_at, int) \
                or self.tail_full_at < 0:
            raise ConfigError(f"tail_full_at must be an int >= 0 (tokens; 0: off), got "
                              f"{self.tail_full_at!r}")
        for name in ("low_water", "volatile_share", "tool_share", "tool_output_share",
                     "summary_share", "recall_share"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0.0 <= v < 1.0:
                raise ConfigError(f"{name} must be a number in [0, 1), got {v!r}")


__all__ = ["BuildOptions"]
