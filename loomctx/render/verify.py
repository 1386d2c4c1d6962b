"""Verify: the rendered request fits the budget, obeys its provider's rules, and how much of it
repeats the previous request.

Rendering is re-counted with the model's own tokenizer; while it is over budget the weakest
removable unit goes (reason ``overflow``), unless the renderer cuts its own text by section
(a text renderer with ``overflow="sections"``: [Context] first, instructions last; the
items it removed or shortened are reported ``section_cut``). The payload is
then checked against the provider's structural rules (:mod:`loomctx.render.validate`): a
request the provider would reject never leaves the builder.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from loomctx.errors import BudgetError, InvalidRequestError
from loomctx.items import ContextItem
from loomctx.render.protocol import Layout, Rendered, Renderer
from loomctx.render.validate import check
from loomctx.text.messages import common_prefix_length


def render_within(renderer: Renderer, layout: Callable[[Sequence[ContextItem]], Layout],
                  included: list[ContextItem], total: int, reasons: dict[str, str],
                  ) -> tuple[Rendered, list[ContextItem]]:
    """Render; while over ``total``, remove the weakest removable unit; then check structure."""
    included = list(included)
    while True:
        rendered = renderer.render(layout(included))
        if rendered.tokens <= total:
            break
        cut = getattr(renderer, "cut", None)
        fitted = cut(rendered, total) if cut is not None else None
        if fitted is not None and fitted.tokens <= total:  # the renderer cuts by section
            rendered = fitted
            included = _after_cut(renderer, layout(included), included, fitted, reasons)
            break
        victim = weakest(included)
        if victim is None:
            raise BudgetError(
                f"rendered context is {rendered.tokens} tokens > budget {total} with only "
                "pinned items left: raise max_tokens", required=rendered.tokens,
                available=total)
        gone = {id(it) for it in victim}
        included = [it for it in included if id(it) not in gone]
        reasons.update(dict.fromkeys((it.id for it in victim), "overflow"))
    problems = check(rendered.format, rendered.payload)
    if problems:
        raise InvalidRequestError(
            f"the {rendered.format} request failed its structural check ({'; '.join(problems)});"
            " this is a loomctx bug: please report it with the session's history",
            problems=problems)
    return rendered, included


def _after_cut(renderer: Renderer, lay: Layout, included: list[ContextItem],
               rendered: Rendered, reasons: dict[str, str]) -> list[ContextItem]:
    """The items still shown after a section cut; the report says ``section_cut`` for every
    item the cut removed or shortened."""
    after_cut = getattr(renderer, "after_cut", None)
    if after_cut is None:
        return included
    gone, partly = after_cut(lay, str(rendered.payload["text"]))
    for it in included:
        if id(it) in gone or id(it) in partly:
            reasons[it.id] = "section_cut"
    return [it for it in included if id(it) not in gone]


_PREFIX = frozenset({"role", "tools"})
"""Sections of the stable prefix: an item there goes only when nothing volatile is left, since
dropping it changes the start of every request after it (the whole prompt cache)."""


def weakest(included: Sequence[ContextItem]) -> list[ContextItem] | None:
    """The unit to drop first: lowest score among non-history items and the oldest history
    unit (the history tail stays contiguous), volatile items before the stable prefix's; a
    tool group goes whole."""
    movable = [it for it in included if not it.pinned]
    if not movable:
        return None
    volatile = [it for it in movable if it.section not in _PREFIX]
    movable = volatile or movable
    history = sorted((it for it in movable if it.kind == "message"), key=lambda i: i.seq)
    pool = [it for it in movable if it.kind != "message"]
    if history:
        pool.append(history[0])
    victim = min(pool, key=lambda it: (it.scores.get("composite", it.priority), -it.seq))
    if victim.group is not None:
        return [it for it in movable if it.group == victim.group
                and it.source == victim.source]
    return [victim]


def reused_prefix(renderer: Renderer, prev: Mapping[str, Any] | None,
                  cur: Mapping[str, Any], tokens: int) -> int:
    """Tokens at the start of ``cur`` that repeat ``prev`` byte for byte, counted in whole
    leading parts (the tools block, the system part, each message), as a prompt cache
    reuses them; 0 when there is no previous request. ``tokens`` is ``cur``'s exact count.

    This is the report's cheap count in the provider's tokens; ``loomctx.eval.cache`` is the
    benchmark's independent ruler over the serialised text."""
    if prev is None:
        return 0
    if "text" in cur:
        b = str(cur["text"])
        n = common_prefix_length(str(prev.get("text", "")), b)
        counter = getattr(renderer, "counter", None)
        return counter.count(b[:n]) if counter is not None and n else 0
    chat = getattr(renderer, "chat", None)
    if chat is None:
        return 0
    tools = cur.get("tools") or []
    if (prev.get("tools") or []) != tools:
        return 0
    if "system" in cur and prev.get("system") != cur["system"]:
        return chat.tools(tools) if tools else 0
    old_msgs, new_msgs = prev.get("messages", []), cur.get("messages", [])
    k = 0
    while k < min(len(old_msgs), len(new_msgs)) and old_msgs[k] == new_msgs[k]:
        k += 1
    head = (chat.tools(tools) if tools else 0) + (
        chat.system(cur["system"]) if "system" in cur else 0)
    if k <= len(new_msgs) - k:  # count the shorter side: the shared head ...
        return head + sum(chat.message(m) for m in new_msgs[:k])
    # ... or the differing end (a turn's few new messages), from the exact total
    return max(0, tokens - chat.reply_priming - sum(chat.message(m) for m in new_msgs[k:]))


def reused_parts(prev: Mapping[str, Any] | None, cur: Mapping[str, Any]) -> int:
    """How many leading parts of ``cur`` repeat ``prev``, by the rule :func:`reused_prefix`
    counts tokens with, so a report page can mark the cached prefix in the request itself.

    A text format's parts are characters. A chat request's parts are, in order: the tools
    block (when it has tools), the ``system`` field (Anthropic), then each message; the count
    stops at the first part that differs. 0 when there is no previous request."""
    if prev is None:
        return 0
    if "text" in cur:
        return common_prefix_length(str(prev.get("text", "")), str(cur["text"]))
    tools = cur.get("tools") or []
    if (prev.get("tools") or []) != tools:
        return 0
    parts = 1 if tools else 0
    if "system" in cur:
        if prev.get("system") != cur["system"]:
            return parts
        parts += 1
    old_msgs, new_msgs = prev.get("messages", []), cur.get("messages", [])
    k = 0
    while k < min(len(old_msgs), len(new_msgs)) and old_msgs[k] == new_msgs[k]:
        k += 1
    return parts + k


__all__ = ["render_within", "reused_parts", "reused_prefix", "weakest"]
