"""Conversation history (the L1 recent window of a build): OpenAI-style messages.

Items keep the ids they were added with, their chronological position (``seq``) and their tool
group. The packer keeps a contiguous recent tail; a tool call is never split from its results.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Mapping, Sequence
from typing import Any

from loomctx.items import ContextItem, Tier
from loomctx.sources.messages import message_text, provider_message, validate_history
from loomctx.sources.protocol import SourceRequest


class _LayeredSet:
    """A set view of ``base`` plus what is added, without copying ``base``."""

    def __init__(self, base: set[str]) -> None:
        self.base = base
        self.added: set[str] = set()

    def __contains__(self, key: object) -> bool:
        return key in self.added or key in self.base

    def add(self, key: str) -> None:
        self.added.add(key)


class HistorySource:
    """Chat history; items are built once per message and reused across builds."""

    history = True
    """History-like: the builder keeps it in order and never ranks it by score."""
    share: float | None = None
    """Budget ratio; None uses the budget manager's ratio for this source's name."""

    def __init__(
        self, messages: Sequence[Mapping[str, Any]] = (), *, name: str = "L1_recent",
        origin: str = "history",
    ) -> None:
        self.name = name
        self._origin = origin
        self._items: list[ContextItem] = []
        self._open_calls: dict[str, str] = {}
        self._ids: set[str] = set()
        self._next_seq = 0
        self._staged: tuple[list[ContextItem], dict[str, str], set[str]] | None = None
        self.extend(messages)

    def extend(self, messages: Sequence[Mapping[str, Any]]) -> list[ContextItem]:
        """Append messages (validated together with what came before); return the new items."""
        new = self.validate(messages)
        self.commit(new)
        return new

    def validate(self, messages: Sequence[Mapping[str, Any]]) -> list[ContextItem]:
        """Check messages against what came before and make their items, changing nothing;
        :meth:`commit` appends them (a store write can go in between)."""
        if not messages:
            return []
        # Validate against layers over the state, so a bad batch leaves the source unchanged
        # and a single append costs O(batch), not O(history).
        calls: ChainMap[str, str] = ChainMap({}, self._open_calls)
        ids = _LayeredSet(self._ids)
        checked = validate_history(messages, origin=self._origin, start=self._next_seq,
                                   open_calls=calls, seen_ids=ids)  # type: ignore[arg-type]
        new = [self._item(msg, self._next_seq + k) for k, msg in enumerate(checked)]
        self._staged = (new, calls.maps[0], ids.added)
        return new

    def commit(self, items: Sequence[ContextItem]) -> None:
        """Append the items the last :meth:`validate` returned."""
        if not items:
            return
        staged = self._staged
        if staged is None or staged[0] is not items:
            raise RuntimeError("commit() takes the items of the last validate()")
        self._staged = None
        self._open_calls.update(staged[1])
        self._ids |= staged[2]
        self._items.extend(items)
        self._next_seq += len(items)

    def append(self, message: Mapping[str, Any]) -> ContextItem:
        self.extend([message])
        return self._items[-1]

    def _item(self, msg: dict[str, Any], seq: int) -> ContextItem:
        pm = provider_message(msg)
        return ContextItem(
            id=msg["id"], source=self.name, content=message_text(pm), kind="message",
            role=msg["role"], tier=Tier.P3, priority=0.5, timestamp=msg.get("timestamp"),
            group=msg.get("group"), message=pm, seq=seq,
        )

    def evict_oldest(self) -> list[ContextItem]:
        """Remove and return the oldest unit (a message, or a tool call with its results)."""
        if not self._items:
            return []
        group = self._items[0].group
        n = 1
        if group is not None:
            while n < len(self._items) and self._items[n].group == group:
                n += 1
        out, self._items = self._items[:n], self._items[n:]
        return out

    @property
    def items(self) -> Sequence[ContextItem]:
        return self._items

    def __len__(self) -> int:
        return len(self._items)

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        return self._items


__all__ = ["HistorySource"]
