"""The sources a controller builds from: one per session, and the agent's L3 memory.

:class:`SessionSource` wraps a session's unified retrieval over its own memory under the name
``session:<id>``, so one :class:`~loomctx.builder.ContextBuilder` over many of them ranks every
session's candidates on one scale, packs them under one budget, and reports each item under the
session it came from. :class:`AgentMemorySource` (defined in
:mod:`loomctx.retrieval.agent_memory`, since every Session has one) recalls the agent's L3
records (session summaries and cross-session facts) in the scope of the agent, so every session
of that agent can retrieve them and no other agent or tenant can.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from loomctx.items import ContextItem
from loomctx.retrieval.agent_memory import AgentMemorySource
from loomctx.retrieval.source import UnifiedRetrievalSource
from loomctx.session import Session
from loomctx.sources.protocol import BaseSource, SourceRequest

SESSION_PREFIX = "session:"
"""Source names of per-session sources start with this; the rest is the session id."""


class SessionSource(BaseSource):
    """One session's retrieval over its memory (every tier it holds), as a builder source.

    Item ids get the session id in front, so two sessions reusing a message id stay two items;
    ``metadata["session"]`` names the session as well.
    """

    def __init__(self, session: Session, *, recall_limit: int = 20) -> None:
        self.session = session
        self.name = f"{SESSION_PREFIX}{session.id}"
        self._retrieval = UnifiedRetrievalSource(session.memory, name=self.name,
                                                 recall_limit=recall_limit)
        self.collected: dict[str, ContextItem] = {}
        """The items of the last collect by id, whole (an aggregate that is remembered as L3
        stores what went in, not a cut copy)."""

    eager = True  # waits on threads only

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        items = await self._retrieval.collect(request)
        sid = self.session.id
        out = [replace(it, id=f"{sid}/{it.id}", metadata={**it.metadata, "session": sid})
               for it in items]
        self.collected = {it.id: replace(it) for it in out}
        return out


def session_of(source: str) -> str | None:
    """The session id a per-session source name stands for (None for any other source)."""
    return source[len(SESSION_PREFIX):] if source.startswith(SESSION_PREFIX) else None


__all__ = ["AgentMemorySource", "SessionSource", "session_of"]
