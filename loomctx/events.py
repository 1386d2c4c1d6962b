"""Typed events a session and its builder emit, and the :class:`EventSink` hook they go to.

Every step that changes what a session remembers or sends is an event: a message added, records
moved between tiers (eviction to L2, archiving to L4), a build completed (with its report), the
session ended. The default sink drops them; :class:`RecordingSink` keeps them (tests, debugging);
an event bus (in-process or across processes) implements the same one-method protocol.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from loomctx.report import BuildReport

EVENT_VERSION = 1
"""Bumped when an event's fields change incompatibly (consumers check ``version``)."""


@dataclass(frozen=True, kw_only=True)
class MessageAdded:
    """Messages were stored (level L1) and entered the session's history."""

    kind: Literal["message_added"] = "message_added"
    version: int = EVENT_VERSION
    tenant: str
    session: str
    ids: tuple[str, ...]
    at: float


@dataclass(frozen=True, kw_only=True)
class TierMoved:
    """Records changed tier: L1 → L2 (important), L1/L2 → L4 (archived), or into L3."""

    kind: Literal["tier_moved"] = "tier_moved"
    version: int = EVENT_VERSION
    tenant: str
    session: str
    ids: tuple[str, ...]
    level: str
    at: float


@dataclass(frozen=True, kw_only=True)
class BuildCompleted:
    """A context was built; ``report`` says what went in, what stayed out and why."""

    kind: Literal["build_completed"] = "build_completed"
    version: int = EVENT_VERSION
    tenant: str
    session: str | None
    tokens: int
    reused_prefix_tokens: int
    report: BuildReport = field(repr=False)
    at: float


@dataclass(frozen=True, kw_only=True)
class SessionEnded:
    """A session ended; ``summary_id`` is its L3 summary record (None for an empty session)."""

    kind: Literal["session_ended"] = "session_ended"
    version: int = EVENT_VERSION
    tenant: str
    session: str
    summary_id: str | None
    at: float


Event = MessageAdded | TierMoved | BuildCompleted | SessionEnded


@runtime_checkable
class EventSink(Protocol):
    """Receives every event of the sessions and builders it is given to.

    Contract:
    - ``emit`` is called synchronously, in order, on the thread that made the change; it must
      be quick and must not call back into the session (queue the event and return).
    - An exception raised by ``emit`` propagates to the caller: a sink that may fail should
      catch and log its own errors.
    """

    def emit(self, event: Event) -> None: ...


class NullSink:
    """The default: events go nowhere."""

    def emit(self, event: Event) -> None:
        return None


class RecordingSink:
    """Keeps every event in ``events`` (tests, debugging, replay)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.kind == kind]


__all__ = ["EVENT_VERSION", "BuildCompleted", "Event", "EventSink", "MessageAdded", "NullSink",
           "RecordingSink", "SessionEnded", "TierMoved"]
