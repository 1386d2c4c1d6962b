"""What history validation remembers between messages: ids used and tool calls in flight.

The state is small on purpose: because results must directly follow their call, only the last
tool-call group can still take results (``open_group`` with its ``waiting`` ids); every earlier
group is closed, and closed with unanswered ids only when the process crashed between a call and
its result (``interrupted``). A :meth:`HistoryState.layer` over a state lets a batch be checked
in O(batch) and then committed, or dropped when it fails, leaving the state as it was.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Iterable, MutableMapping
from dataclasses import dataclass, field
from typing import Protocol


class Members(Protocol):
    """The set operations validation needs (a ``set`` or a layered view over one)."""

    def __contains__(self, key: object) -> bool: ...

    def add(self, key: str) -> None: ...


class _LayeredSet:
    """A set view of ``base`` plus what is added, without copying ``base``."""

    def __init__(self, base: Members) -> None:
        self.base = base
        self.added: set[str] = set()

    def __contains__(self, key: object) -> bool:
        return key in self.added or key in self.base

    def add(self, key: str) -> None:
        self.added.add(key)


def _new_set() -> set[str]:
    return set()


@dataclass
class HistoryState:
    """Validation state of one history (see :func:`loomctx.sources.messages.validate_history`)."""

    ids: Members = field(default_factory=_new_set)
    """Message ids already used."""
    call_ids: Members = field(default_factory=_new_set)
    """Tool call ids already used by an assistant message."""
    answered: Members = field(default_factory=_new_set)
    """Tool call ids that already have their result."""
    open_group: str | None = None
    """Group of the last assistant tool-call message while some of its calls are unanswered."""
    waiting: list[str] = field(default_factory=list)
    """The open group's unanswered call ids, in call order."""
    interrupted: MutableMapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Group → call ids left unanswered when the conversation moved on (a crash)."""

    def open(self, group: str, call_ids: Iterable[str]) -> None:
        """A new assistant tool-call message: its calls now wait for results."""
        self.open_group = group
        self.waiting = list(call_ids)
        for cid in self.waiting:
            self.call_ids.add(cid)

    def answer(self, call_id: str) -> str:
        """Record the result of a waiting call; return the group it belongs to."""
        group = self.open_group
        assert group is not None and call_id in self.waiting
        self.waiting = [c for c in self.waiting if c != call_id]
        self.answered.add(call_id)
        if not self.waiting:
            self.open_group = None
        return group

    def close(self) -> None:
        """A non-tool message arrived: calls still waiting will never be answered."""
        if self.open_group is not None and self.waiting:
            self.interrupted[self.open_group] = tuple(self.waiting)
        self.open_group, self.waiting = None, []

    @property
    def pending(self) -> tuple[str, ...]:
        """Call ids the trailing group still waits for (empty when nothing is in flight)."""
        return tuple(self.waiting) if self.open_group is not None else ()

    def layer(self) -> HistoryState:
        """A state that reads through to this one and records its own changes apart."""
        return HistoryState(
            ids=_LayeredSet(self.ids), call_ids=_LayeredSet(self.call_ids),
            answered=_LayeredSet(self.answered), open_group=self.open_group,
            waiting=list(self.waiting), interrupted=ChainMap({}, self.interrupted),
        )

    def commit(self, child: HistoryState) -> _Undo:
        """Apply a :meth:`layer`'s changes here; the result can :meth:`rollback` them."""
        undo = _Undo(self.open_group, list(self.waiting))
        for mine, theirs, added in ((self.ids, child.ids, undo.ids),
                                    (self.call_ids, child.call_ids, undo.call_ids),
                                    (self.answered, child.answered, undo.answered)):
            assert isinstance(theirs, _LayeredSet)
            for key in theirs.added:
                mine.add(key)
            added.extend(theirs.added)
        assert isinstance(child.interrupted, ChainMap)
        new = child.interrupted.maps[0]
        undo.interrupted = [g for g in new if g not in self.interrupted]
        self.interrupted.update(new)
        self.open_group, self.waiting = child.open_group, list(child.waiting)
        return undo

    def rollback(self, undo: _Undo) -> None:
        """Undo the last :meth:`commit` (only the last one: later commits build on it)."""
        for members, keys in ((self.ids, undo.ids), (self.call_ids, undo.call_ids),
                              (self.answered, undo.answered)):
            assert isinstance(members, set)
            members.difference_update(keys)
        for group in undo.interrupted:
            self.interrupted.pop(group, None)
        self.open_group, self.waiting = undo.open_group, undo.waiting


@dataclass
class _Undo:
    open_group: str | None
    waiting: list[str]
    ids: list[str] = field(default_factory=list)
    call_ids: list[str] = field(default_factory=list)
    answered: list[str] = field(default_factory=list)
    interrupted: list[str] = field(default_factory=list)


__all__ = ["HistoryState", "Members"]
