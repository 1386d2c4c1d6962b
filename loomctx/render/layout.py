"""Structure: chosen items placed for prompt caching, stable first and volatile last.

Tools and the system part (system prompt, skills, output instructions) lead; then the summary of
compacted history, which changes only at compaction steps; then the history in order; then what
changes every turn (state, retrieved evidence) and the current input last.
"""

from __future__ import annotations

from collections.abc import Sequence

from loomctx.items import ContextItem
from loomctx.render.protocol import Layout


def layout(included: Sequence[ContextItem], output: str = "") -> Layout:
    """Place ``included`` items; order within a place is chronological or by score."""
    lay = Layout(output=output)
    for it in sorted(included, key=lambda i: (i.kind != "system", i.seq)):
        if it.kind == "state" and it.metadata.get("compacted"):
            lay.summary.append(it)
        else:
            lay.add(it)
    lay.tools.sort(key=lambda i: i.seq)
    lay.history.sort(key=lambda i: i.seq)
    # Retrieved evidence: best first; custom components keep their insertion order.
    lay.evidence.sort(key=lambda i: (i.kind == "custom", 0.0 if i.kind == "custom"
                                     else -i.scores.get("composite", 0.0), i.seq))
    return lay


class LayoutOnce:
    """:func:`layout` for one build, done once for the same items: a build places its final
    items to render them, to keep a recall note and for its report; the same list of the same
    objects gets the same :class:`Layout` (which its readers do not change)."""

    def __init__(self, output: str = "") -> None:
        self.output = output
        self._last: tuple[list[ContextItem], Layout] | None = None

    def __call__(self, included: Sequence[ContextItem]) -> Layout:
        last = self._last
        if last is not None and len(last[0]) == len(included) and all(
                a is b for a, b in zip(last[0], included, strict=True)):
            return last[1]
        lay = layout(included, self.output)
        self._last = (list(included), lay)
        return lay


def in_order(lay: Layout) -> list[ContextItem]:
    """The items of a layout in the order they are rendered (the report's positions)."""
    return [*lay.tools, *lay.system, *lay.summary, *lay.history, *lay.state, *lay.evidence,
            *lay.input]


__all__ = ["LayoutOnce", "in_order", "layout"]
