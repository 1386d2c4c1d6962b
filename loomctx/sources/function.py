"""A source that is a plain function: a callback gatherer.

Much context comes from a small callback (a memory look-up, a RAG query), while a source is an
object with one ``collect``. Writing a class for a one-line look-up is friction,
so :class:`FunctionSource` turns a function into a :class:`~loomctx.sources.protocol.ContextSource`:
it is called with the :class:`~loomctx.sources.protocol.SourceRequest`, may be sync or async,
and may return strings (each becomes one item of ``kind``) or ready
:class:`~loomctx.items.ContextItem` objects. A sync function runs in a worker thread, so a slow
look-up cannot stall the other sources; its timeout and failures are the builder's, as for any
source (a failing function degrades the build and is named in the report).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from loomctx.errors import ConfigError, SourceError
from loomctx.items import KIND_SECTION, ContextItem, Kind, Tier
from loomctx.sources.protocol import BaseSource, SourceRequest

Gatherer = Callable[[SourceRequest], Any]
"""What :class:`FunctionSource` wraps: request → strings or items (or an awaitable of them)."""


class FunctionSource(BaseSource):
    """A function as a source: ``FunctionSource("weather", lambda req: [lookup(req.query)])``."""

    def __init__(self, name: str, fn: Gatherer, *, kind: Kind = "evidence",
                 tier: Tier = Tier.P2, priority: float = 0.5) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"a FunctionSource needs a non-empty name, got {name!r}")
        if not callable(fn):
            raise ConfigError(f"FunctionSource {name!r}: fn must be callable, got {fn!r}")
        if kind not in KIND_SECTION or kind in ("message", "tool"):
            allowed = sorted(k for k in KIND_SECTION if k not in ("message", "tool"))
            raise ConfigError(f"FunctionSource {name!r}: kind must be one of {allowed!r} "
                              f"(history and tools have their own sources), got {kind!r}")
        if not isinstance(tier, Tier):
            raise ConfigError(f"FunctionSource {name!r}: tier must be a Tier, got {tier!r}")
        if isinstance(priority, bool) or not isinstance(priority, int | float) \
                or not 0.0 <= priority <= 1.0:
            raise ConfigError(f"FunctionSource {name!r}: priority must be in [0, 1], got "
                              f"{priority!r}")
        self.name = name
        self.fn = fn
        self.kind: Kind = kind
        self.tier = tier
        self.priority = float(priority)

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        if inspect.iscoroutinefunction(self.fn):
            out = await self.fn(request)
        else:
            out = await asyncio.to_thread(self.fn, request)
            if inspect.isawaitable(out):
                out = await out
        if out is None:
            return []
        if isinstance(out, str | bytes) or not isinstance(out, Iterable):
            raise SourceError(f"FunctionSource {self.name!r} returned {out!r}: return a list "
                              "of strings or ContextItem objects", source=self.name)
        items: list[ContextItem] = []
        for n, x in enumerate(out):
            if isinstance(x, ContextItem):
                items.append(x if x.source == self.name else replace(x, source=self.name))
            elif isinstance(x, str):
                if x.strip():
                    items.append(ContextItem(
                        id=f"{self.name}:{n}", source=self.name, content=x, kind=self.kind,
                        tier=self.tier, priority=self.priority, timestamp=request.now, seq=n))
            else:
                raise SourceError(f"FunctionSource {self.name!r} returned an element {x!r}: "
                                  "each must be a str or a ContextItem", source=self.name)
        return items


__all__ = ["FunctionSource", "Gatherer"]
