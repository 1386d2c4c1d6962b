"""The ``recall`` tool: the agent asks its memory directly.

Retrieval before every model call is the passive channel; this is the active one. The model
calls ``recall(query, limit)`` and gets back, as the tool's result, the memories the session's
own retrieval finds for that query: this conversation (every tier), what the agent's earlier
sessions concluded (L3 and its L4 copies), a parent's memory for a sub-agent, the shared L2 pool
and the knowledge bases. The result is a tool message like any other, so the next build budgets
it like any other tool result (clipped when it is larger than a message may be, kept with its
call, compacted with the history).

:class:`~loomctx.agent.loop.Agent` offers it when built with ``recall_tool=True``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from loomctx.agent.tools import Tool
from loomctx.errors import ConfigError
from loomctx.items import ContextItem
from loomctx.retrieval.agent_memory import AgentMemorySource
from loomctx.retrieval.inherited import InheritedSource
from loomctx.retrieval.shared import SharedL2Source
from loomctx.retrieval.source import UnifiedRetrievalSource
from loomctx.session import Session
from loomctx.sources.protocol import ContextSource, SourceRequest

RECALL_TOOL = "recall"
"""The tool's name, as the model sees it."""
MAX_LIMIT = 20
"""Most memories one call returns."""
RECALL_TOTAL = 4000
"""The build size retrieval is told (it sizes how widely it recalls by it)."""


def memory_sources(session: Session) -> list[ContextSource]:
    """The session's sources that recall memory or knowledge for a query, in build order."""
    kinds = (UnifiedRetrievalSource, AgentMemorySource, InheritedSource, SharedL2Source)
    return [s for s in session.builder.sources if isinstance(s, kinds)]


async def recall(session: Session, query: str, limit: int = 5) -> str:
    """The memories for ``query`` as the tool's result text, one per line, best first
    (the sources' rankings interleaved, duplicates once)."""
    query = query.strip() if isinstance(query, str) else ""
    if not query:
        return "error: give recall a query: what to look for, in words"
    limit = max(1, min(MAX_LIMIT, int(limit)))
    request = SourceRequest(query=query, now=session.clock(),
                            counter=session.builder.tokenizer.counter, budget=RECALL_TOTAL,
                            total=RECALL_TOTAL)
    sources = memory_sources(session)
    found = await asyncio.gather(*(s.collect(request) for s in sources),
                                 return_exceptions=True)
    lists: list[Sequence[ContextItem]] = [f for f in found if not isinstance(f, BaseException)]
    picked: list[ContextItem] = []
    seen: set[str] = set()
    for rank in range(max((len(x) for x in lists), default=0)):
        for items in lists:
            if rank < len(items) and items[rank].fingerprint not in seen:
                seen.add(items[rank].fingerprint)
                picked.append(items[rank])
    picked = picked[:limit]
    if not picked:
        return f"no memory matches {query!r}"
    return "\n".join(_line(it) for it in picked)


def _line(it: ContextItem) -> str:
    where = it.metadata.get("origin") or it.source
    who = f"{it.role}: " if it.role else ""
    return f"- ({where}) {who}{' '.join(it.content.split())}"


def recall_tool(session: Callable[[], Session] | Session | None) -> Tool:
    """The ``recall`` tool over ``session`` (or over the session a callable returns when
    called, for an agent whose session is made after its tools; None: only its schema, for
    ``Session(tools=[..., recall_tool(None).schema])``)."""

    def current() -> Session:
        got = session() if callable(session) else session
        if got is None:
            raise ConfigError("this recall tool was made without a session: give it one")
        return got

    async def fn(query: str, limit: int = 5) -> str:
        """Search your memory: this conversation, what your earlier sessions concluded, and
        the knowledge you were given. Use it when something you need is not in view.

        Args:
            query: What to look for, in words (names, topics, a question).
            limit: How many memories to return, 1 to 20.
        """
        return await recall(current(), query, limit)

    return Tool.from_function(fn, name=RECALL_TOOL)


__all__ = ["MAX_LIMIT", "RECALL_TOOL", "memory_sources", "recall", "recall_tool"]
