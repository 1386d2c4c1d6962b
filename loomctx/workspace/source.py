"""A role's context as a source of an ordinary session, for agents built on ``loomctx.Agent``.

The ``build_*_context`` functions build a role's whole window. An agent on a
:class:`~loomctx.session.Session` already has its own system prompt and its conversation; it
needs the role's *workspace view* (timeline, notes, quota, references) as one more source,
re-read from the live workspace before every model call. :class:`RoleSource` is that source: it
asks a role's ``*_items`` function for the current items at build time and drops the parts the
session supplies itself (instructions, the current input), unless told to keep the input.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from loomctx.errors import ConfigError
from loomctx.items import ContextItem, Tier
from loomctx.sources.protocol import BaseSource, SourceRequest


@dataclass
class RoleSource(BaseSource):
    """Items of a role, described fresh for every build (e.g. ``lambda: orchestrator_items(...)``).

    ``share`` is the fraction of the build's budget declared for it; its P0 parts (the quota)
    stay pinned; the input item, when kept, becomes pinned task state. A session dedups items
    by content, so a line repeated word for word (the same action in two rounds) is shown once
    there; ``build_*_context`` shows every occurrence.
    """

    describe: Callable[[], Sequence[ContextItem]]
    name: str = "workspace"
    share: float | None = 0.5
    keep_input: bool = False

    def __post_init__(self) -> None:
        if self.share is not None and not 0 < self.share <= 1:
            raise ConfigError(f"share must be in (0, 1] or None, got {self.share!r}")

    eager = True  # answers from memory

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        out: list[ContextItem] = []
        for it in self.describe():
            if it.kind == "system":
                continue
            if it.kind == "input":
                if not self.keep_input:
                    continue
                it = replace(it, kind="state", role=None, tier=Tier.P0)
            out.append(replace(it, source=self.name, metadata=dict(it.metadata), scores={}))
        return out


__all__ = ["RoleSource"]
