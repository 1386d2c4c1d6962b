"""What the three role builders share: previews, the items source, the adaptive build.

A role context is a list of :class:`~loomctx.items.ContextItem` run through an ordinary
:class:`~loomctx.builder.ContextBuilder`, so it gets the exact budget, the report and the cache
layout of every other build. A builder describes its items at a *detail level*: level 0 is the full
one (the ``Previews`` lengths, every round in full); each higher level is more compact. The build
tries level 0 and moves up only while items would be dropped, so the first level where everything
fits wins, and the last level is kept when none does. Items shown more compactly than at level 0
carry the detail in their id (``note:persona1~20``), so the report names them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from loomctx.builder import BuildResult, ContextBuilder
from loomctx.items import ContextItem, Kind, Tier
from loomctx.options import BuildOptions
from loomctx.render.placement import Placement
from loomctx.select.scoring import SelectOptions
from loomctx.sources.protocol import BaseSource, SourceRequest

INCLUDED = frozenset({"pinned", "required", "selected"})
"""Report reasons of an item shown whole (``truncated`` counts as not fitting)."""


def preview(text: str, chars: int, *, flatten: bool = True) -> str:
    """A preview: newlines folded (when ``flatten``), cut to ``chars`` + ``...``."""
    clean = " ".join(text.split()) if flatten else text
    return clean[:chars] + "..." if len(clean) > chars else clean


def one_line(text: str) -> str:
    """Whitespace (newlines included) folded to single spaces: a full observe/think on one line."""
    return " ".join(text.split())


@dataclass
class ItemsSource(BaseSource):
    """A source holding a fixed list of items, declaring the whole budget as its share."""

    items: Sequence[ContextItem]
    name: str
    share: float = 1.0

    eager = True  # answers from memory

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        return [replace(it, metadata=dict(it.metadata), scores={}) for it in self.items]


class Items:
    """Collects a role's items in order (``seq`` is the position, the layout keeps it)."""

    def __init__(self, role: str) -> None:
        self.role = role
        self.items: list[ContextItem] = []

    def add(self, item_id: str, content: str, *, kind: Kind, tier: Tier,
            priority: float = 0.5) -> None:
        if not content:
            return
        role = {"system": "system", "input": "user"}.get(kind)
        self.items.append(ContextItem(id=item_id, source=self.role, content=content, kind=kind,
                                      role=role, tier=tier, priority=priority,
                                      seq=len(self.items)))


def fits(result: BuildResult) -> bool:
    """True when every candidate is shown whole."""
    return all(r.reason in INCLUDED for r in result.report.items)


def build_adaptive(role: str, describe: Callable[[int], list[ContextItem]], levels: int, *,
                   budget: int, model: str, format: str,
                   placement: Placement | None = None) -> BuildResult:
    """Build at level 0, 1, ... until every item fits; the last level when none does.
    ``placement``: where a chat format puts the turn's state and evidence
    (:attr:`BuildOptions.placement`; None: the format's default)."""
    # Repeated lines are distinct positions here (the same action in two rounds): no dedup.
    options = BuildOptions(model=model, format=format, placement=placement,
                           summarize_history=False, select=SelectOptions(dedup=False))
    result: BuildResult | None = None
    for level in range(levels):
        builder = ContextBuilder([ItemsSource(describe(level), name=role)], options=options)
        result = builder.build_sync("", max_tokens=budget)
        if fits(result):
            break
    assert result is not None
    return result


def priority_by_age(index: int, count: int) -> float:
    """0.1 .. 0.9 rising with position: newer items are kept before older ones."""
    return 0.1 + 0.8 * (index + 1) / max(count, 1)


__all__ = ["INCLUDED", "Items", "ItemsSource", "build_adaptive", "fits", "one_line",
           "preview", "priority_by_age"]
