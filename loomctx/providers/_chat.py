"""What the chat renderers share: the text of the system part, the summary, the input and
the turn's evidence block, and the placement check.

Layout (stable first, volatile last, for prompt caching): tools, then one system part (system
prompt, active skills, output instructions), then the history in order, then the volatile part
(state and retrieved evidence) and the current input last. Each provider's renderer decides
where the volatile part goes in its wire format.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from loomctx.errors import ConfigError, InputError
from loomctx.items import ContextItem
from loomctx.providers.layout import Layout
from loomctx.providers.placement import PLACEMENTS


class ChatCount(Protocol):
    """The chat counter a renderer prices its payload with
    (:class:`loomctx.tokens.chat.ChatCounter`)."""

    reply_priming: int
    tools_overhead: int

    def text(self, s: str) -> int: ...

    def message(self, msg: Any) -> int: ...

    def system(self, system: Any) -> int: ...

    def tool(self, tool_def: Any) -> int: ...

    def tools(self, defs: Any) -> int: ...

    def messages(self, msgs: Any, tools: Any = None, *, system: Any = None) -> int: ...


EVIDENCE_HEADER = "Context for this turn (state and retrieved evidence):"
SIZES_MAX = 500_000
"""History messages whose token counts a renderer keeps (cleared whole past it)."""


class LineCosts:
    """What a line of the evidence block costs (its text's tokens and one for its line break),
    kept by text: a build prices a thousand recalled memories, most of them the last build's
    too, and this is a dictionary look-up where the counter's shared cache takes a lock."""

    def __init__(self, chat: ChatCount) -> None:
        self._chat = chat
        self._known: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        n = self._known.get(text)
        if n is None:
            if len(self._known) >= SIZES_MAX:
                self._known.clear()
            n = self._known[text] = self._chat.text(text) + 1
        return n


def system_text(layout: Layout) -> str:
    parts = [i.content for i in layout.system]
    if layout.output:
        parts.append(layout.output)
    return "\n\n".join(parts)


def summary_text(layout: Layout) -> str:
    return "\n\n".join(i.content for i in layout.summary)


def input_message(item: ContextItem) -> dict[str, Any]:
    """The current input as a user message, with its parts (images) when it has them."""
    msg = item.message
    if msg is not None and msg.get("content") is not None:
        out = {"role": "user", "content": msg["content"]}
        if msg.get("name"):
            out["name"] = msg["name"]
        return out
    return {"role": "user", "content": item.content}


def volatile_text(layout: Layout) -> str:
    lines = [i.content for i in (*layout.state, *layout.evidence)]
    return EVIDENCE_HEADER + "\n\n" + "\n\n".join(lines) if lines else ""


def check_placement(placement: str) -> None:
    if placement not in PLACEMENTS:
        raise ConfigError(f"placement must be one of {list(PLACEMENTS)!r}, got {placement!r}; "
                          "'user_block' suits chat templates that allow one system message")


def message_object(value: Any, where: str) -> dict[str, Any]:
    """A request's message (or block) as a dict, or the caller's error naming where."""
    if not isinstance(value, Mapping):
        raise InputError(f"a message must be an object, got {type(value).__name__}",
                         where=where)
    return dict(value)


__all__ = ["EVIDENCE_HEADER", "SIZES_MAX", "ChatCount", "LineCosts", "check_placement",
           "input_message", "message_object", "summary_text", "system_text", "volatile_text"]
