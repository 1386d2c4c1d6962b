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


def in_order(lay: Layout) -> list[ContextItem]:
    """The items of a layout in the order they are rendered (the report's positions)."""
    return [*lay.tools, *lay.system, *lay.summary, *lay.history, *lay.state, *lay.evidence,
            *lay.input]


__all__ = ["in_order", "layout"]
