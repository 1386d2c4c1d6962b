"""The :class:`Renderer` contract: turning chosen items into what is sent to the model.

A renderer knows its format's token arithmetic: ``cost(item)`` is the item's marginal cost when
rendered (measure before render), ``overhead(sections)`` the fixed framing reserved before
packing, and
``render(layout)`` produces the payload together with its exact token count.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from loomctx.items import ContextItem, Section


@dataclass
class Layout:
    """Chosen items by place, in the cache-friendly order: stable first, volatile last."""

    system: list[ContextItem] = field(default_factory=list)
    """System prompt first, then active skills (stable prefix)."""
    tools: list[ContextItem] = field(default_factory=list)
    """Tool definitions, in their original order (stable prefix)."""
    summary: list[ContextItem] = field(default_factory=list)
    """Summary of compacted history: same text until the next compaction step (after system)."""
    history: list[ContextItem] = field(default_factory=list)
    """Conversation, chronological."""
    state: list[ContextItem] = field(default_factory=list)
    """Task state and agent output (volatile)."""
    evidence: list[ContextItem] = field(default_factory=list)
    """Retrieved knowledge and memory (volatile)."""
    input: list[ContextItem] = field(default_factory=list)
    """The current user input (last)."""
    output: str = ""
    """Output instructions (stable, with the system part)."""

    def add(self, item: ContextItem) -> None:
        """Append ``item`` to the place of its section (:data:`~loomctx.items.KIND_SECTION`)."""
        getattr(self, SECTION_FIELD[item.section]).append(item)


SECTION_FIELD: dict[Section, str] = {
    "role": "system",
    "tools": "tools",
    "context": "history",
    "state": "state",
    "evidence": "evidence",
    "task": "input",
}
"""Section → the :class:`Layout` list holding its items (``output`` is the text ``output``)."""


@dataclass(frozen=True)
class Rendered:
    """A rendered context: the payload to send and its exact size."""

    format: str
    """openai | anthropic | text | minimal | template."""
    payload: dict[str, Any]
    """``messages`` (+ ``tools``) for openai; ``system`` + ``messages`` (+ ``tools``) for
    anthropic; ``text`` for the text formats."""
    tokens: int
    """Exact token count of the payload (chat overhead included)."""
    prefix_tokens: int
    """Tokens of the stable prefix (tools + system part)."""
    prefix_hash: str
    """sha256 of the stable prefix as rendered; equal across turns means a cache hit."""



def stable_hash(obj: Any) -> str:
    """sha256 of a canonical JSON form."""
    data = json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()


@runtime_checkable
class Renderer(Protocol):
    """Renders a :class:`Layout` for one provider format.

    Contract: for every layout, ``render(layout).tokens <= overhead() + sum(cost(i) for i in
    layout items)`` holds up to a few tokens of join effects, which the builder's verify step
    removes; ``render`` is deterministic (same layout → byte-identical payload).
    """

    format: str

    def cost(self, item: ContextItem) -> int: ...

    def overhead(self, sections: frozenset[str] | None = None) -> int:
        """Fixed framing for a build whose candidates fall in ``sections`` (None: any)."""
        ...

    def render(self, layout: Layout) -> Rendered: ...


__all__ = ["SECTION_FIELD", "Layout", "Rendered", "Renderer", "stable_hash"]
