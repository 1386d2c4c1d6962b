"""A plain function as a context source: the seed's callback gatherers.

Seed 002 plugs memory and RAG into a build as callbacks (``NewRAGGatherer(func(ctx, query,
topK) ...)``). :class:`FunctionSource` does the same: it calls ``fn(query, limit)`` (sync or
async) at every build and turns what comes back into items::

    def search(query: str, limit: int) -> list[dict]:
        return [{"content": hit.text, "score": hit.score} for hit in index.find(query, limit)]

    builder = ContextBuilder([SystemPromptSource("..."), FunctionSource(search, name="rag")])

Each result may be text, a mapping (``content`` or ``text``; optional ``id``, ``score`` in
[0, 1], ``metadata``) or a ready :class:`~loomctx.items.ContextItem`. A function that raises
or returns something else fails this source only: the builder reports it and builds without it.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from loomctx.errors import ConfigError, SourceError
from loomctx.items import ContextItem, Tier
from loomctx.sources.protocol import SourceRequest

Result = str | Mapping[str, Any] | ContextItem
Fetch = Callable[[str, int], Iterable[Result] | Awaitable[Iterable[Result]]]


class FunctionSource:
    """``fn(query, limit)`` at every build; its results become ``kind`` items of ``tier``."""

    share: float | None = None
    """Budget ratio; None uses the budget manager's ratio for this source's name."""

    def __init__(self, fn: Fetch, *, name: str, limit: int = 5, kind: str = "evidence",
                 tier: Tier = Tier.P2, share: float | None = None) -> None:
        if not callable(fn):
            raise ConfigError(f"fn must be a function (query, limit) -> results, got {fn!r:.80}")
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"name must be non-empty text (the source's budget key), got "
                              f"{name!r}")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ConfigError(f"limit must be an int >= 1, got {limit!r}")
        if share is not None and not 0.0 < share <= 1.0:
            raise ConfigError(f"share must be in (0, 1] or None, got {share!r}")
        self.fn, self.name, self.limit, self.kind, self.tier = fn, name, limit, kind, tier
        self.share = share

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        out = self.fn(request.query, self.limit)
        if inspect.isawaitable(out):
            out = await out
        if isinstance(out, (str, bytes)) or not isinstance(out, Iterable):
            raise SourceError(f"{self.name}: the function returned {type(out).__name__}, not a "
                              "list of results (text, mappings or ContextItems)",
                              source=self.name)
        return [self._item(k, r) for k, r in enumerate(list(out)[: self.limit])]

    def _item(self, k: int, r: Result) -> ContextItem:
        if isinstance(r, ContextItem):
            return r
        if isinstance(r, str):
            r = {"content": r}
        if not isinstance(r, Mapping):
            raise SourceError(f"{self.name}: result {k} is {type(r).__name__}: give text, a "
                              "mapping with 'content' or a ContextItem", source=self.name)
        text = r.get("content", r.get("text"))
        if not isinstance(text, str):
            raise SourceError(f"{self.name}: result {k} has no 'content' text: {r!r:.80}",
                              source=self.name)
        score = r.get("score")
        if score is not None and not (isinstance(score, (int, float)) and 0 <= score <= 1):
            raise SourceError(f"{self.name}: result {k} has score {score!r}; use [0, 1]",
                              source=self.name)
        return ContextItem(id=str(r.get("id") or f"{self.name}:{k}"), source=self.name,
                           kind=self.kind, content=text, tier=self.tier,  # type: ignore[arg-type]
                           priority=float(score) if score is not None else 0.5,
                           metadata=dict(r.get("metadata") or {}))


__all__ = ["FunctionSource"]
