"""Typed events a session and its builder emit, and the :class:`EventSink` hook they go to.

Every step that changes what a session remembers or sends is an event: a message added, records
moved between tiers (eviction to L2, archiving to L4), a build completed (with its report), the
session paused, resumed or ended, a task taken, completed or cancelled. An
:class:`~loomctx.agent.Agent` adds the steps of its loop: a turn started, the context rebuilt
for it, the model called (with the provider's token counts), each tool call started and
finished. The default sink drops them; :class:`RecordingSink` keeps them (tests,
debugging); an event bus (in-process or across processes) implements the same one-method
protocol.
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
    agent: str | None = None
    """The session's agent: where its L3 records live (None from an older producer)."""


@dataclass(frozen=True, kw_only=True)
class SessionPaused:
    """A session was paused: it takes no messages until resumed (its builds still work)."""

    kind: Literal["session_paused"] = "session_paused"
    version: int = EVENT_VERSION
    tenant: str
    session: str
    agent: str | None = None
    at: float


@dataclass(frozen=True, kw_only=True)
class SessionResumed:
    """A paused session was resumed."""

    kind: Literal["session_resumed"] = "session_resumed"
    version: int = EVENT_VERSION
    tenant: str
    session: str
    agent: str | None = None
    at: float


@dataclass(frozen=True, kw_only=True)
class TaskAdded:
    """A session took a task (its own ``add_task``, or a controller's ``add_task`` /
    ``distribute_task``); its builds show it until it is completed or cancelled."""

    kind: Literal["task_added"] = "task_added"
    version: int = EVENT_VERSION
    tenant: str
    session: str
    agent: str | None = None
    task_id: str
    description: str
    at: float


@dataclass(frozen=True, kw_only=True)
class TaskUpdated:
    """A session's task changed status: ``done`` or ``cancelled`` (it leaves the builds)."""

    kind: Literal["task_updated"] = "task_updated"
    version: int = EVENT_VERSION
    tenant: str
    session: str
    agent: str | None = None
    task_id: str
    status: Literal["pending", "done", "cancelled"]
    at: float


@dataclass(frozen=True, kw_only=True)
class TurnStarted:
    """An agent began a turn: one model call and the tool calls it asks for."""

    kind: Literal["turn_started"] = "turn_started"
    version: int = EVENT_VERSION
    tenant: str
    session: str
    turn: int
    """0 for the first model call of a run."""
    at: float


@dataclass(frozen=True, kw_only=True)
class ContextRebuilt:
    """An agent built the context for a model call; ``reason`` is ``context_length`` when the
    provider refused the previous build as too long and this one has a smaller budget."""

    kind: Literal["context_rebuilt"] = "context_rebuilt"
    version: int = EVENT_VERSION
    tenant: str
    session: str
    turn: int
    budget: int
    tokens: int
    reused_prefix_tokens: int
    reason: Literal["turn", "context_length"]
    report: BuildReport = field(repr=False)
    at: float


@dataclass(frozen=True, kw_only=True)
class ModelCalled:
    """A model answered; the token counts are the provider's, next to loomctx's prediction."""

    kind: Literal["model_called"] = "model_called"
    version: int = EVENT_VERSION
    tenant: str
    session: str
    turn: int
    model: str
    prompt_tokens: int
    """Input tokens the provider counted (cached ones included)."""
    completion_tokens: int
    cached_tokens: int
    """Input tokens the provider served from its prompt cache."""
    predicted_tokens: int
    """The build's own count of the request."""
    predicted_reusable_tokens: int
    """The build's ``reused_prefix_tokens``: what a prompt cache could have reused."""
    tool_calls: int
    finish_reason: str | None
    at: float


@dataclass(frozen=True, kw_only=True)
class ToolStarted:
    """An agent started one tool call the model asked for."""

    kind: Literal["tool_started"] = "tool_started"
    version: int = EVENT_VERSION
    tenant: str
    session: str
    turn: int
    call_id: str
    name: str
    at: float


@dataclass(frozen=True, kw_only=True)
class ToolFinished:
    """A tool call ended: ``status`` ``ok``, ``error`` or ``timeout`` (its result was added)."""

    kind: Literal["tool_finished"] = "tool_finished"
    version: int = EVENT_VERSION
    tenant: str
    session: str
    turn: int
    call_id: str
    name: str
    status: Literal["ok", "error", "timeout", "not_run"]
    """``not_run`` never appears here (a refused call never starts); the type is shared."""
    at: float


Event = (MessageAdded | TierMoved | BuildCompleted | SessionEnded | SessionPaused
         | SessionResumed | TaskAdded | TaskUpdated | TurnStarted | ContextRebuilt | ModelCalled
         | ToolStarted | ToolFinished)


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


__all__ = ["EVENT_VERSION", "BuildCompleted", "ContextRebuilt", "Event", "EventSink",
           "MessageAdded", "ModelCalled", "NullSink", "RecordingSink", "SessionEnded",
           "SessionPaused", "SessionResumed", "TaskAdded", "TaskUpdated", "TierMoved",
           "ToolFinished", "ToolStarted", "TurnStarted"]
