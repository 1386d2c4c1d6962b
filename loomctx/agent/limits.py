"""When an agent run stops short of a final answer: the limits, checked between steps.

A limit is a normal way for a run to end, not an error: :class:`~loomctx.agent.AgentResult`
names the one that stopped it (``stop``), and the session is left valid (every tool call that
was made has its result), so ``run()`` may be called again to go on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from loomctx.errors import ConfigError

StopReason = Literal["final", "max_turns", "max_tool_calls", "max_tokens_spent",
                     "max_wall_time"]
"""Why a run ended: ``final`` (the model answered without asking for tools) or the limit."""


@dataclass(frozen=True, kw_only=True)
class AgentLimits:
    """Bounds on one ``Agent.run``; None means no bound."""

    max_turns: int | None = 20
    """Model calls per run (a turn is one model call and the tool calls it asks for)."""
    max_tool_calls: int | None = None
    """Tool calls per run. Calls past it are answered ``error: not run`` and the run stops."""
    max_tokens_spent: int | None = None
    """Prompt plus completion tokens per run, as the provider reports them (``usage``);
    checked before each model call."""
    max_wall_time: float | None = None
    """Seconds per run. Model and tool calls are cut when it runs out (a cut tool call is
    answered as timed out)."""

    def __post_init__(self) -> None:
        for name in ("max_turns", "max_tool_calls", "max_tokens_spent"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ConfigError(f"{name} must be an int >= 1 or None, got {v!r}")
        w = self.max_wall_time
        if w is not None and (isinstance(w, bool) or not isinstance(w, (int, float))
                              or not math.isfinite(w) or w <= 0):
            raise ConfigError(f"max_wall_time must be a number of seconds > 0 or None, got {w!r}")

    def reached(self, *, turns: int, tool_calls: int, tokens_spent: int,
                elapsed: float) -> StopReason | None:
        """The limit that forbids another model call, or None."""
        if self.max_wall_time is not None and elapsed >= self.max_wall_time:
            return "max_wall_time"
        if self.max_turns is not None and turns >= self.max_turns:
            return "max_turns"
        if self.max_tokens_spent is not None and tokens_spent >= self.max_tokens_spent:
            return "max_tokens_spent"
        return None

    def remaining(self, elapsed: float) -> float | None:
        """Seconds left of the wall time, or None without that bound."""
        return None if self.max_wall_time is None else max(0.0, self.max_wall_time - elapsed)


__all__ = ["AgentLimits", "StopReason"]
