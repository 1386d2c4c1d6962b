"""Agent output: the agent's own earlier results, weighted down with age (e^(−Δt/τ))."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from loomctx.errors import ConfigError
from loomctx.items import ContextItem, Tier
from loomctx.sources.protocol import BaseSource, SourceRequest


@dataclass(frozen=True, kw_only=True)
class AgentOutput:
    """One result the agent produced earlier (a plan, a finding, a tool summary)."""

    id: str
    """Stable id."""
    content: str
    """The text."""
    timestamp: float
    """Epoch seconds when it was produced."""


@dataclass
class AgentOutputSource(BaseSource):
    """Recent agent outputs as ``state`` items; priority decays with age."""

    outputs: list[AgentOutput] = field(default_factory=list)
    tau: float = 3600.0
    name: str = "agent_output"

    def __post_init__(self) -> None:
        if self.tau <= 0:
            raise ConfigError(f"tau must be > 0 seconds, got {self.tau!r}")

    def add(self, output: AgentOutput) -> None:
        self.outputs.append(output)

    eager = True  # answers from memory

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        out = []
        for i, o in enumerate(self.outputs):
            age = max(0.0, request.now - o.timestamp)
            out.append(ContextItem(
                id=o.id, source=self.name, content=o.content, kind="state", tier=Tier.P2,
                priority=math.exp(-age / self.tau), timestamp=o.timestamp, seq=i,
            ))
        return out


__all__ = ["AgentOutput", "AgentOutputSource"]
