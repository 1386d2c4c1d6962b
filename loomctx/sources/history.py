"""Conversation history (the L1 recent window of a build): OpenAI-style messages.

Items keep the ids they were added with, their chronological position (``seq``) and their tool
group. The packer keeps a contiguous recent tail; a tool call is never split from its results.

Messages are checked and repaired by the rules of :mod:`loomctx.sources.messages`. Two tool-call
states are legal and handled at collect time, without changing what is stored:

- an *interrupted* group (its results never came, the conversation moved on): ``collect``
  returns, right after the group's last item, one synthetic ``tool`` result per missing call id
  (content :data:`~loomctx.sources.messages.INTERRUPTED_TEXT`, ``metadata["repair"] ==
  "interrupted_call"``, id ``"{group}:interrupted:{call_id}"``, the group's last ``seq``);
- a *pending* group (the last assistant turn, still waiting for its tools): its items come with
  ``metadata["pending"] = True`` until the results are added.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from loomctx.items import ContextItem, Tier
from loomctx.sources._history_state import HistoryState
from loomctx.sources.messages import (
    INTERRUPTED_TEXT,
    message_text,
    provider_message,
    validate_history,
)
from loomctx.sources.protocol import BaseSource, SourceRequest


class HistorySource(BaseSource):
    """Chat history; items are built once per message and reused across builds."""

    history = True
    """History-like: the builder keeps it in order and never ranks it by score."""

    def __init__(
        self, messages: Sequence[Mapping[str, Any]] = (), *, name: str = "L1_recent",
        origin: str = "history",
    ) -> None:
        self.name = name
        self._origin = origin
        self._items: list[ContextItem] = []
        self._state = HistoryState()
        self._next_seq = 0
        self._undo: tuple[Any, int, int] | None = None
        self._view: tuple[tuple[int, int], list[ContextItem]] | None = None
        self.extend(messages)

    def extend(self, messages: Sequence[Mapping[str, Any]]) -> list[ContextItem]:
        """Append messages (validated together with what came before); return the new items.

        All or nothing: a batch with one bad message raises :class:`InputError` and leaves the
        source unchanged. Costs O(batch), not O(history).
        """
        if not messages:
            return []
        layer = self._state.layer()
        checked = validate_history(messages, origin=self._origin, start=self._next_seq,
                                   state=layer)
        self._undo = (self._state.commit(layer), len(self._items), self._next_seq)
        new = []
        for msg in checked:
            new.append(self._item(msg, self._next_seq))
            self._next_seq += 1
        self._items.extend(new)
        self._view = None
        return new

    def check(self, messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Raise the :class:`InputError` :meth:`extend` would raise for ``messages``, changing
        nothing: a caller can refuse a batch before anything else of it is kept. Returns the
        messages as :meth:`extend` would keep them (checked and repaired copies)."""
        if not messages:
            return []
        return validate_history(messages, origin=self._origin, start=self._next_seq,
                                state=self._state.layer())

    def append(self, message: Mapping[str, Any]) -> ContextItem:
        self.extend([message])
        return self._items[-1]

    def undo_extend(self) -> list[ContextItem]:
        """Take back the last :meth:`extend` (e.g. when storing its messages failed).

        Returns the removed items. Only the last batch can be taken back, and only while
        nothing else (an eviction, :meth:`interrupt`) changed the history since.
        """
        if self._undo is None:
            return []
        undo, length, seq = self._undo
        self._undo = None
        self._state.rollback(undo)
        removed, self._items = self._items[length:], self._items[:length]
        self._next_seq = seq
        self._view = None
        return removed

    def interrupt(self) -> tuple[str, ...]:
        """Treat the calls the last group still waits for as interrupted; return their ids.

        For a caller that moves on without the results (or drops the message that came after
        them, as the CLI does with the question it shows as the input).
        """
        waiting = self._state.pending
        if waiting:
            self._state.close()
            self._undo = None
            self._view = None
        return waiting

    @property
    def pending_calls(self) -> tuple[str, ...]:
        """Call ids the last assistant turn still waits for (empty when none)."""
        return self._state.pending

    @property
    def interrupted_calls(self) -> Mapping[str, tuple[str, ...]]:
        """Group → call ids whose results never came (answered by synthetic results)."""
        return self._state.interrupted

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
        if group is not None:
            self._state.interrupted.pop(group, None)
        self._undo = None
        self._view = None
        return out

    @property
    def items(self) -> Sequence[ContextItem]:
        """The stored messages as given (no synthetic results, no pending marks)."""
        return self._items

    def __len__(self) -> int:
        return len(self._items)

    eager = True  # answers from memory

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        """The history with interrupted calls answered and the pending group marked.

        The list is built anew whenever the history changes and never changed once handed out,
        so builds share it (:func:`~loomctx.sources.gather.gather` does not copy it)."""
        # Keyed on the list too, for callers that trim ``items`` themselves.
        key = (len(self._items), id(self._items[-1]) if self._items else 0)
        if self._view is None or self._view[0] != key:
            self._view = (key, self._build_view())
        return self._view[1]

    def _build_view(self) -> list[ContextItem]:
        """The stored list copied (C speed), then patched: pending marks on the trailing group,
        synthetic results after interrupted groups (a Python pass only when there are any)."""
        items = self._items
        out = list(items)
        if self._state.pending:
            pending = self._state.open_group
            k = len(out) - 1
            while k >= 0 and out[k].group == pending:
                out[k] = replace(out[k], metadata={**out[k].metadata, "pending": True})
                k -= 1
        interrupted = self._state.interrupted
        if not interrupted:
            return out
        patched: list[ContextItem] = []
        for k, item in enumerate(out):
            patched.append(item)
            group = item.group
            if (group is not None and group in interrupted
                    and (k + 1 == len(out) or out[k + 1].group != group)):
                patched.extend(_interrupted_result(item, cid) for cid in interrupted[group])
        return patched


def _interrupted_result(last: ContextItem, call_id: str) -> ContextItem:
    """The synthetic result of a call that never returned, placed after its group."""
    return ContextItem(
        id=f"{last.group}:interrupted:{call_id}", source=last.source, content=INTERRUPTED_TEXT,
        kind="message", role="tool", tier=last.tier, priority=last.priority,
        timestamp=last.timestamp, group=last.group, seq=last.seq,
        message={"role": "tool", "tool_call_id": call_id, "content": INTERRUPTED_TEXT},
        metadata={"repair": "interrupted_call"},
    )


__all__ = ["HistorySource"]
