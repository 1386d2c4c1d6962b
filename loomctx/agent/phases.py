"""The task phase of a turn, inferred from where the agent is in its run.

The :class:`~loomctx.budget.manager.AdaptiveBudgetManager` shifts the sources' shares by
phase; the agent loop is the one place that knows the phase, so it passes one to every build:

- ``early``: the first model call of a run, or a call after a new user message: the task is
  being understood, so knowledge and recalled memory get more room;
- ``middle``: tool results just came in: the recent exchange and the tool definitions do;
- ``late``: many steps in, or close to ``max_turns``: what proved important and what the
  agent already produced do, so it can conclude.
"""

from __future__ import annotations

from typing import Literal

Phase = Literal["early", "middle", "late"]

LATE_AFTER = 8
"""Turns after which a run is late whatever its limit."""
LATE_REMAINING = 2
"""A run is late when at most this many turns remain before ``max_turns``."""


def infer_phase(turn: int, last_role: str | None, *, max_turns: int | None = None) -> Phase:
    """The phase of the build for model call ``turn`` (0 first) of a run, given the role of
    the session's newest message (``tool``: results came in)."""
    if turn > 0 and (turn >= LATE_AFTER or (max_turns is not None
                                            and max_turns - turn <= LATE_REMAINING)):
        return "late"
    if last_role == "tool":
        return "middle"
    return "early"


__all__ = ["LATE_AFTER", "LATE_REMAINING", "Phase", "infer_phase"]
