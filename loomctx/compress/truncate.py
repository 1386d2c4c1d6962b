"""Truncation with a visible marker: one item cut to a token target, or whole sections.

Cut content is never lost: the original item stays in the build result (``originals``) and in
whatever store it came from; the marker names its id.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from loomctx.errors import BudgetError
from loomctx.items import ContextItem
from loomctx.tokens.protocol import TokenCounter

MARKER = "\n…[truncated: {shown} of {total} tokens shown; full text id={id}]"


def truncate_item(
    item: ContextItem, target: int, counter: TokenCounter, cost: Callable[[ContextItem], int],
    *, tail: float = 0.0,
) -> ContextItem | None:
    """A copy of ``item`` whose rendered cost is <= ``target``, or None if nothing useful fits.

    Only text content is cut; an item whose message has no string content is not cut. The
    copy keeps the head of the text, and with ``tail`` (0..1) that share of what it keeps from
    the end instead, whole lines (a log's latest lines, a listing's totals), the marker between.
    """
    if item.message is not None and not isinstance(item.message.get("content"), str):
        return None
    total = counter.count(item.content)
    base = cost(replace(item, content="", message=_with_content(item, ""), tokens=None))
    marker_cost = counter.count(MARKER.format(shown=total, total=total, id=item.id)) + (
        2 if tail > 0 else 1)
    keep = target - base - marker_cost
    for _ in range(4):
        if keep <= 0:
            return None
        end = _last_lines(item.content, int(keep * tail), counter) if tail > 0 else ""
        end_tokens = counter.count(end) if end else 0
        head = counter.truncate(item.content[:len(item.content.rstrip("\n")) - len(end)]
                                if end else item.content, keep - end_tokens)
        shown = counter.count(head) + end_tokens
        text = head + MARKER.format(shown=shown, total=total, id=item.id) + (
            "\n" + end if end else "")
        cut = replace(item, content=text, message=_with_content(item, text),
                      metadata={**item.metadata, "truncated_from": total}, tokens=None)
        c = cost(cut)
        if c <= target:
            cut.tokens = c
            return cut
        keep -= c - target
    return None


def _last_lines(text: str, budget: int, counter: TokenCounter) -> str:
    """The most whole lines from the end of ``text`` that count at most ``budget`` tokens
    (none when its last line alone is longer: the head then keeps that room). Read from the
    end, line by line: a huge output is not split whole for its last few lines."""
    body = text.rstrip("\n")
    first = body.find("\n")  # the first line is the head's
    start = len(body)
    used = 0
    while start > first >= 0:
        cut = body.rfind("\n", first, start)
        used += counter.count(body[cut + 1:start]) + 1
        if used > budget:
            break
        start = cut
    return body[start + 1:] if start < len(body) else ""


def _with_content(item: ContextItem, text: str) -> dict | None:
    if item.message is None:
        return None
    return {**item.message, "content": text}


SECTION_PRIORITY = ("[Context]", "[Evidence]", "[State]", "[Output]", "[Task]",
                    "[Role & Policies]")
SECTION_MARKER = {"zh": "... (内容已截断)", "en": "... (content truncated)"}
"""The line that ends a cut section (the seed's marker, by language)."""
_HEADER = re.compile(r"^(\[[^\]\n]+\])$", re.MULTILINE)
_WHOLE = "[Role & Policies]"
_NEVER_DELETED = "[Task]"
_NEWEST_KEPT = "[Context]"


Sections = list[tuple[str, str]]
"""A sectioned text as (header line, body) pairs in order; the body starts with the line break
after its header and keeps the blank line before the next header."""


def split_sections(text: str) -> tuple[str, Sections]:
    """``text`` as its lead (before the first header) and its (header, body) pairs. A body
    line that looks like a header splits it too: a renderer that knows its sections passes
    them to :func:`cut_sections` instead of parsing its own text."""
    parts = _HEADER.split(text)
    return parts[0], list(zip(parts[1::2], parts[2::2], strict=True))


def join_sections(lead: str, sections: Sections) -> str:
    return lead + "".join(h + body for h, body in sections)


def truncate_sections(text: str, max_tokens: int, counter: TokenCounter, *,
                      marker: str = SECTION_MARKER["zh"]) -> str:
    """GSSC section-priority truncation of sectioned text (:func:`cut_sections` over the
    ``[Header]`` lines of ``text``)."""
    if counter.count(text) <= max_tokens:
        return text
    lead, pairs = split_sections(text)
    return join_sections(lead, cut_sections(pairs, max_tokens, counter, marker=marker,
                                            lead=lead))


def cut_sections(sections: Sections, max_tokens: int, counter: TokenCounter, *,
                 marker: str = SECTION_MARKER["zh"], lead: str = "") -> Sections:
    """GSSC section-priority truncation: lowest section first, halve, then delete; returns the
    sections kept (cut ones end with ``marker``) in their order.

    The order of cutting is ``SECTION_PRIORITY`` (unknown sections go first). A section is
    halved (its head kept, ``marker`` on its last line); if the text is still over, it is
    deleted. Three differences from the seed, on purpose: ``[Context]`` (the conversation)
    keeps its newest half, the marker first, as the turns just before the question matter
    most; the ``[Task]`` section (the user's input) is never deleted, it is cut to what fits
    instead, so the request still asks something; and ``[Role & Policies]`` (the system prompt)
    is never cut: when it and a piece of the task cannot fit, this raises
    :class:`BudgetError`.
    """
    bodies: dict[int, str] = dict(enumerate(body for _, body in sections))
    headers = [h for h, _ in sections]

    def rebuild() -> str:
        return lead + "".join(headers[i] + bodies[i] for i in sorted(bodies))

    before = counter.count(rebuild())
    if before <= max_tokens:
        return list(sections)
    rank = {h: n for n, h in enumerate(SECTION_PRIORITY)}
    order = sorted(bodies, key=lambda i: rank.get(headers[i], -1))  # stable: unknown first
    task: int | None = None
    for i in order:
        header = headers[i]
        if header == _WHOLE or counter.count(rebuild()) <= max_tokens:
            break
        body = bodies[i]
        content = body.strip("\n")
        half = counter.count(content) // 2
        if header == _NEWEST_KEPT:  # history: the newest half, marker first
            bodies[i] = _cut_body(body, _tail(content, half, counter), marker, tail=True)
        else:
            bodies[i] = _cut_body(body, counter.truncate(content, half), marker)
        if counter.count(rebuild()) <= max_tokens:
            break
        if header != _NEVER_DELETED:
            del bodies[i]
            continue
        task = i
        fitted = _fit_body(i, body, content, bodies, rebuild, max_tokens, counter, marker)
        if fitted is None:
            break
        bodies[i] = fitted
    if counter.count(rebuild()) > max_tokens or (
            task is not None and bodies[task].strip("\n") == marker):
        kept = counter.count("".join(headers[i] + bodies[i] for i in bodies
                                     if headers[i] == _WHOLE))
        raise BudgetError(
            f"text_overflow='sections': {_WHOLE} ({kept} tokens, never cut) leaves no room "
            f"for the {_NEVER_DELETED} section in a budget of {max_tokens} tokens once every "
            "other section is cut: raise max_tokens or shorten the system prompt",
            required=before, available=max_tokens)
    return [(headers[i], bodies[i]) for i in sorted(bodies)]


def _tail(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """The longest end of ``text`` within ``max_tokens`` (a binary search over its start)."""
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi) // 2
        if counter.count(text[mid:]) <= max_tokens:
            hi = mid
        else:
            lo = mid + 1
    return text[lo:]


def _cut_body(body: str, kept: str, marker: str, *, tail: bool = False) -> str:
    """``body`` (a section's text after its header line) with only ``kept`` and the marker
    (after it, or before it when ``tail``)."""
    end = body[len(body.rstrip("\n")):]
    kept = kept.strip()
    if not kept:
        return "\n" + marker + end
    return "\n" + (f"{marker}\n{kept}" if tail else f"{kept}\n{marker}") + end


def _fit_body(i: int, body: str, content: str, bodies: dict[int, str],
              rebuild: Callable[[], str], max_tokens: int, counter: TokenCounter,
              marker: str) -> str | None:
    """Section ``i``'s body cut to the largest head of ``content`` with which the whole text
    fits; None (its body left as the marker alone) when not even a token of it fits."""
    bodies[i] = _cut_body(body, "", marker)
    keep = max_tokens - counter.count(rebuild())
    for _ in range(4):
        if keep <= 0:
            return None
        head = counter.truncate(content, keep)
        if not head.strip():
            return None
        bodies[i] = _cut_body(body, head, marker)
        over = counter.count(rebuild()) - max_tokens
        if over <= 0:
            return bodies[i]
        keep -= over
    bodies[i] = _cut_body(body, "", marker)
    return None


__all__ = ["MARKER", "SECTION_MARKER", "SECTION_PRIORITY", "Sections", "cut_sections",
           "join_sections", "split_sections", "truncate_item", "truncate_sections"]
