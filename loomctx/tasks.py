"""Tasks of sessions: what a task is, where a session's tasks are kept, how builds show them.

A task is a unit of work handed to a session: by the session itself (:meth:`TaskHolder.add_task`,
the seed's ``Session.add_task``), or by a
:class:`~loomctx.controller.ContextController` (``add_task``, ``distribute_task``), which shares
one :class:`TaskBoard` among the sessions it manages. Tasks are kept beside the session's own
lifecycle (ACTIVE / PAUSED / ENDED); every task taken or changed is an event
(:class:`~loomctx.events.TaskAdded`, :class:`~loomctx.events.TaskUpdated`) on the session's sink,
an event bus when it has one.

A task reaches the session's context through :class:`TaskSource`: the session's next build shows
its pending tasks in the instructions (pinned, oldest first), and a completed or cancelled task
leaves it. The text only changes when the list does, so between hand-outs it stays in the
provider's cached prefix.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import TYPE_CHECKING, Any

from loomctx.errors import ConfigError
from loomctx.events import EventSink, TaskAdded, TaskUpdated
from loomctx.items import ContextItem, Tier
from loomctx.sources.protocol import BaseSource, ContextSource, SourceRequest

TASKS_SOURCE = "tasks"
"""The name of the source that shows a session's pending tasks in its builds."""
MAX_SHOWN = 8
"""Pending tasks one build shows by default (the oldest; the rest are counted in a line)."""


class TaskStatus(str, Enum):
    PENDING = "pending"
    DONE = "done"
    CANCELLED = "cancelled"


@dataclass(frozen=True, kw_only=True)
class Task:
    """One unit of work a session was given."""

    description: str
    """What to do, in words (shown to the session's agent by the caller)."""
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    """Unique among one session's tasks; the same task given to many sessions keeps one id."""
    status: TaskStatus = TaskStatus.PENDING
    """Where the task is: pending until completed or cancelled."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """Free-form data (priority, origin...), JSON-serialisable."""

    def __post_init__(self) -> None:
        if not isinstance(self.description, str) or not self.description.strip():
            raise ConfigError(f"a task needs a non-empty description, got {self.description!r}")
        if not isinstance(self.id, str) or not self.id:
            raise ConfigError(f"a task id must be a non-empty str, got {self.id!r}")


class TaskBoard:
    """Tasks by session, in the order they were given (one session's own, or the shared board
    of a controller's sessions)."""

    def __init__(self) -> None:
        self._tasks: dict[str, dict[str, Task]] = {}

    def add(self, session: str, task: Task) -> Task:
        """Give ``task`` to ``session``; a task id the session already holds is refused."""
        tasks = self._tasks.setdefault(session, {})
        if task.id in tasks:
            raise ConfigError(f"session {session!r} already has task {task.id!r}: give the "
                              "new task another id")
        tasks[task.id] = task
        return task

    def of(self, session: str, status: TaskStatus | None = None) -> list[Task]:
        """The session's tasks (only those with ``status`` when given), oldest first."""
        return [t for t in self._tasks.get(session, {}).values()
                if status is None or t.status is status]

    def set_status(self, session: str, task_id: str, status: TaskStatus) -> Task:
        """Move one task to ``status``; returns the updated task."""
        tasks = self._tasks.get(session, {})
        if task_id not in tasks:
            known = sorted(tasks)
            raise ConfigError(f"session {session!r} has no task {task_id!r}: its tasks are "
                              f"{known!r}")
        tasks[task_id] = replace(tasks[task_id], status=status)
        return tasks[task_id]

    def cancel_pending(self, session: str) -> int:
        """Cancel every pending task of ``session`` (it ended); returns how many."""
        pending = self.of(session, TaskStatus.PENDING)
        for t in pending:
            self.set_status(session, t.id, TaskStatus.CANCELLED)
        return len(pending)


class TaskSource(BaseSource):
    """A session's pending tasks as one pinned instruction item (``tasks:pending``).

    Pinned because a task handed out must be seen: at most ``max_shown`` of them (the oldest)
    are written out, so a flood of tasks cannot take the whole budget; the others are counted.
    """

    def __init__(self, board: TaskBoard, session: str, *, name: str = TASKS_SOURCE,
                 max_shown: int = MAX_SHOWN) -> None:
        if isinstance(max_shown, bool) or not isinstance(max_shown, int) or max_shown < 1:
            raise ConfigError(f"max_shown must be an int >= 1, got {max_shown!r}")
        self.name = name
        self.board = board
        self.session = session
        self.max_shown = max_shown

    eager = True  # answers from memory

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        pending = self.board.of(self.session, TaskStatus.PENDING)
        if not pending:
            return []
        lines = [f"- [{t.id}] {t.description.strip()}" for t in pending[:self.max_shown]]
        if len(pending) > self.max_shown:
            lines.append(f"- ({len(pending) - self.max_shown} more pending tasks)")
        return [ContextItem(id="tasks:pending", source=self.name, kind="system",
                            content="### Your tasks\n" + "\n".join(lines), tier=Tier.P0,
                            priority=1.0, metadata={"tasks": [t.id for t in pending]})]


class TaskHolder:
    """A session's own side of its tasks (a :class:`~loomctx.session.Session` is one).

    The session keeps its tasks on its own board until a controller that manages it gives it
    the controller's shared board (:meth:`use_tasks`); its builds show them through the
    :class:`TaskSource` it adds on its first task. Needs the session's ``id``, ``tenant``,
    ``agent``, ``events``, ``clock``, ``builder``, ``add_source`` and ``_refuse_ended``.
    """

    id: str
    tenant: str
    agent: str
    events: EventSink
    clock: Callable[[], float]
    _task_board: TaskBoard | None = None

    if TYPE_CHECKING:  # the Session's own
        builder: Any

        def add_source(self, source: ContextSource) -> None: ...

        def _refuse_ended(self, doing: str) -> None: ...

    def _task_source(self) -> TaskSource | None:
        return next((s for s in self.builder.sources if isinstance(s, TaskSource)
                     and s.session == self.id), None)

    @property
    def tasks(self) -> TaskBoard:
        """Where this session's tasks are kept (its own board until a controller shares one)."""
        if self._task_board is None:
            self.use_tasks(TaskBoard())
        assert self._task_board is not None
        return self._task_board

    def use_tasks(self, board: TaskBoard) -> None:
        """Keep this session's tasks on ``board`` from now on (a controller's, shared by its
        sessions): the tasks it holds move there, and its builds show them from there."""
        old = self._task_board
        if board is old:
            return
        if old is not None:
            for t in old.of(self.id):
                board.add(self.id, t)
        source = self._task_source()
        if source is None:
            self.add_source(TaskSource(board, self.id))
        else:
            source.board = board
        self._task_board = board

    def add_task(self, task: Task | str, *, metadata: Mapping[str, Any] | None = None) -> Task:
        """Take a task (a str is its description): the next builds show it until it is
        completed or cancelled; emits :class:`~loomctx.events.TaskAdded`. An ended session
        refuses; a paused one takes it (it shows once resumed work builds again)."""
        self._refuse_ended("take a task")
        t = task if isinstance(task, Task) else Task(description=task,
                                                      metadata=dict(metadata or {}))
        self.tasks.add(self.id, t)
        self.events.emit(TaskAdded(tenant=self.tenant, session=self.id, agent=self.agent,
                                   task_id=t.id, description=t.description, at=self.clock()))
        return t

    def complete_task(self, task_id: str) -> Task:
        """Mark a task done (it leaves the builds); emits :class:`~loomctx.events.TaskUpdated`."""
        return self._set_task(task_id, TaskStatus.DONE)

    def cancel_task(self, task_id: str) -> Task:
        """Cancel a task (it leaves the builds); emits :class:`~loomctx.events.TaskUpdated`."""
        return self._set_task(task_id, TaskStatus.CANCELLED)

    def cancel_pending_tasks(self) -> int:
        """Cancel every pending task (the session ended); returns how many."""
        pending = self.tasks.of(self.id, TaskStatus.PENDING)
        for t in pending:
            self._set_task(t.id, TaskStatus.CANCELLED)
        return len(pending)

    def _set_task(self, task_id: str, status: TaskStatus) -> Task:
        t = self.tasks.set_status(self.id, task_id, status)
        self.events.emit(TaskUpdated(tenant=self.tenant, session=self.id, agent=self.agent,
                                     task_id=t.id, status=status.value, at=self.clock()))
        return t


__all__ = ["MAX_SHOWN", "TASKS_SOURCE", "Task", "TaskBoard", "TaskHolder", "TaskSource",
           "TaskStatus"]
