"""What an agent run did: one record per model call, and the result of the run.

Each :class:`TurnRecord` puts the provider's measured usage (prompt, completion and cached
tokens) next to what the build predicted (its token count and the prefix a prompt cache could
reuse), so cache hits can be checked turn by turn; a turn whose first build the provider refused
as too long says so in ``compaction``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loomctx.agent.limits import StopReason
from loomctx.agent.registry import ToolOutcome
from loomctx.models.protocol import Usage


@dataclass(frozen=True, kw_only=True)
class TurnRecord:
    """One model call and the tool calls it asked for."""

    turn: int
    """0 for the first model call of the run."""
    phase: str | None = None
    """The task phase its build was given (early / middle / late), or None."""
    budget: int
    """The token budget of the build that was sent."""
    tokens: int
    """The build's count of the request (the prediction of ``usage.prompt_tokens``)."""
    reused_prefix_tokens: int
    """Tokens at the start of the request that repeat the previous one (predicted cache)."""
    usage: Usage
    """What the provider measured: prompt, completion and cached tokens."""
    finish_reason: str | None = None
    tool_calls: tuple[ToolOutcome, ...] = ()
    """The calls the model asked for, in its order, with their results."""
    refused_budget: int | None = None
    """The budget of a first build the provider refused as too long (then rebuilt), or None."""
    compaction: str | None = None
    """What happened when the provider refused the first build, or None."""


@dataclass(frozen=True, kw_only=True)
class AgentResult:
    """How a run ended, and every turn of it."""

    output: str | None
    """The final answer's text (``stop == "final"``), else None."""
    stop: StopReason
    """``final``, or the limit that stopped the run."""
    turns: tuple[TurnRecord, ...] = ()
    message: dict[str, Any] | None = field(default=None, repr=False)
    """The last assistant message as stored in the session."""

    @property
    def usage(self) -> Usage:
        """The provider's usage summed over the run."""
        return Usage(prompt_tokens=sum(t.usage.prompt_tokens for t in self.turns),
                     completion_tokens=sum(t.usage.completion_tokens for t in self.turns),
                     cached_tokens=sum(t.usage.cached_tokens for t in self.turns))

    @property
    def tool_calls(self) -> int:
        """Tool calls that ran (calls refused by ``max_tool_calls`` not counted)."""
        return sum(1 for t in self.turns for o in t.tool_calls if o.status != "not_run")

    @property
    def compactions(self) -> list[TurnRecord]:
        """Turns whose first build was refused as too long and rebuilt smaller."""
        return [t for t in self.turns if t.compaction is not None]


__all__ = ["AgentResult", "TurnRecord"]
