"""``ContextAssembler``: the older, simpler API (named components with CRITICAL…LOW priorities).

A thin layer over :class:`~loomctx.builder.ContextBuilder`: components become items of one
source; CRITICAL is pinned (P0), the others compete in priority order and are cut with a marker
when only part of one fits. Output is the components' text in insertion order.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Any

from loomctx.budget.manager import BudgetManager
from loomctx.builder import BuildOptions, BuildResult, ContextBuilder
from loomctx.errors import ConfigError
from loomctx.items import ContextItem, Tier
from loomctx.sources.protocol import BaseSource, SourceRequest


class ComponentPriority(Enum):
    """Component priorities: CRITICAL is never cut; LOW goes first."""

    CRITICAL = "critical"
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


_TIER = {
    ComponentPriority.CRITICAL: (Tier.P0, 1.0),
    ComponentPriority.HIGH: (Tier.P2, 1.0),
    ComponentPriority.MEDIUM: (Tier.P2, 0.6),
    ComponentPriority.LOW: (Tier.P3, 0.2),
}


class _Components(BaseSource):
    name = "components"

    def __init__(self) -> None:
        self.items: list[ContextItem] = []

    eager = True  # answers from memory

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        return list(self.items)


class ContextAssembler:
    """Assemble named text components under ``max_tokens``."""

    def __init__(self, max_tokens: int, *, model: str = "gpt-4o",
                 fallback_encoding: str | None = None) -> None:
        if not isinstance(max_tokens, int) or max_tokens <= 0:
            raise ConfigError(f"max_tokens must be a positive int, got {max_tokens!r}")
        self.max_tokens = max_tokens
        self._source = _Components()
        self._builder = ContextBuilder(
            [self._source],
            options=BuildOptions(model=model, format="minimal", summarize_history=False,
                                 fallback_encoding=fallback_encoding),
            budget=BudgetManager(ratios={"components": 1.0}),
        )
        self._last: BuildResult | None = None

    def add_component(self, name: str, content: str,
                      priority: ComponentPriority = ComponentPriority.MEDIUM) -> None:
        """Add one named component; names must be unique."""
        if not isinstance(priority, ComponentPriority):
            raise ConfigError(f"priority must be a ComponentPriority, got {priority!r}")
        if any(it.id == name for it in self._source.items):
            raise ConfigError(f"component {name!r} was already added: names must be unique")
        tier, weight = _TIER[priority]
        self._source.items.append(ContextItem(
            id=name, source="components", content=content, kind="custom", tier=tier,
            priority=weight, seq=len(self._source.items),
            metadata={"priority": priority.value}, scores={"composite": weight}))
        self._last = None

    def assemble(self) -> str:
        """The components that fit, in insertion order, separated by blank lines."""
        self._last = self._builder.build_sync("", max_tokens=self.max_tokens)
        return self._last.text

    def get_summary(self) -> dict[str, Any]:
        """Token usage and each component's fate (assembles first if needed)."""
        if self._last is None:
            self.assemble()
        assert self._last is not None
        rep = self._last.report
        return {
            "total_tokens": rep.tokens,
            "max_tokens": self.max_tokens,
            "components": [
                {"name": r.id, "priority": self._priority(r.id), "tokens": r.tokens,
                 "included": r.included, "reason": r.reason}
                for r in rep.items
            ],
        }

    def _priority(self, name: str) -> str:
        for it in self._source.items:
            if it.id == name:
                return str(it.metadata["priority"])
        return ""


__all__ = ["ComponentPriority", "ContextAssembler"]
