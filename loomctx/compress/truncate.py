"""Truncation with a visible marker: one item cut to a token target, or whole sections.

Cut content is never lost: the original item stays in the build result (``originals``) and in
whatever store it came from; the marker names its id.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from loomctx.items import ContextItem
from loomctx.tokens.protocol import TokenCounter

MARKER = "\n…[truncated: {shown} of {total} tokens shown; full text id={id}]"


def truncate_item(
    item: ContextItem, target: int, counter: TokenCounter, cost: Callable[[ContextItem], int]
) -> ContextItem | None:
    """A copy of ``item`` whose rendered cost is <= ``target``, or None if nothing useful fits.

    Only text content is cut; an item whose message has no string content is not cut.
    """
    if item.message is not None and not isinstance(item.message.get("content"), str):
        return None
    total = counter.count(item.content)
    base = cost(replace(item, content="", message=_with_content(item, ""), tokens=None))
    marker_cost = counter.count(MARKER.format(shown=total, total=total, id=item.id)) + 1
    keep = target - base - marker_cost
    for _ in range(4):
        if keep <= 0:
            return None
        head = counter.truncate(item.content, keep)
        text = head + MARKER.format(shown=counter.count(head), total=total, id=item.id)
        cut = replace(item, content=text, message=_with_content(item, text),
                      metadata={**item.metadata, "truncated_from": total}, tokens=None)
        c = cost(cut)
        if c <= target:
            cut.tokens = c
            return cut
        keep -= c - target
    return None


def _with_content(item: ContextItem, text: str) -> dict | None:
    if item.message is None:
        return None
    return {**item.message, "content": text}


SECTION_PRIORITY = ("[Context]", "[Evidence]", "[State]", "[Output]", "[Task]",
                    "[Role & Policies]")
_HEADER = re.compile(r"^(\[[^\]\n]+\])$", re.MULTILINE)


def truncate_sections(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """GSSC section-priority truncation of sectioned text: lowest section first, halve, then drop.

    Sections are ``[Header]`` lines; the order of cutting is ``SECTION_PRIORITY`` (unknown
    sections go first). Each cut keeps a marker line. The result is <= ``max_tokens`` unless the
    highest-priority section alone is larger, in which case it is cut too.
    """
    if counter.count(text) <= max_tokens:
        return text
    parts = _HEADER.split(text)
    lead, pairs = parts[0], list(zip(parts[1::2], parts[2::2], strict=True))
    sections = {h: body for h, body in pairs}
    order = [h for h in sections if h not in SECTION_PRIORITY] + [
        h for h in SECTION_PRIORITY if h in sections]

    def rebuild() -> str:
        return lead + "".join(f"{h}{sections[h]}" for h, _ in pairs if h in sections)

    for header in order:
        current = counter.count(rebuild())
        if current <= max_tokens:
            break
        body = sections[header]
        half = counter.count(body) // 2
        sections[header] = counter.truncate(body, half).rstrip() + "\n…[section truncated]\n\n"
        if counter.count(rebuild()) > max_tokens and header != SECTION_PRIORITY[-1]:
            del sections[header]
    out = rebuild()
    if counter.count(out) > max_tokens:
        out = counter.truncate(out, max_tokens)
    return out


__all__ = ["MARKER", "SECTION_PRIORITY", "truncate_item", "truncate_sections"]
