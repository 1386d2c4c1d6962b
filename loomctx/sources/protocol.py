"""The :class:`ContextSource` contract: where candidate context comes from."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from loomctx.items import ContextItem
from loomctx.tokens.protocol import TokenCounter


@dataclass(frozen=True, kw_only=True)
class SourceRequest:
    """What a source is told about the build it contributes to."""

    query: str
    """The current question / user input (may be empty)."""
    now: float
    """Build time, epoch seconds (sources use it for recency, never ``time.time()``)."""
    counter: TokenCounter
    """The target model's counter, for sources that chunk or cut by tokens."""
    budget: int
    """Tokens allocated to this source (a hint: the packer enforces the real limit)."""
    total: int = 0
    """Tokens of the whole build (sources that rank candidates size their recall by it)."""
    phase: str | None = None
    """Task phase (early / middle / late) when the caller knows it."""
    context: dict[str, Any] = field(default_factory=dict)
    """Free-form request data (e.g. recent messages for query rewriting)."""


@runtime_checkable
class ContextSource(Protocol):
    """Produces candidate items for one build.

    Contract:
    - ``name`` is unique within a builder and is the key of the source's budget allocation.
    - ``collect`` may return more than fits: the selector decides. It must not mutate items it
      returned in earlier builds (return fresh items or treat them as read-only).
    - It may be slow or fail: the builder runs it under a timeout and reports the failure.
    """

    name: str

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]: ...


__all__ = ["ContextSource", "SourceRequest"]
