"""Tasks of sessions, kept by the controller.

A task is a unit of work handed to a session (by the caller or by
:meth:`~loomctx.controller.ContextController.distribute_task`). The controller keeps the tasks
keyed by session id, beside the Session's own lifecycle (ACTIVE / PAUSED / ENDED), so a session
stays the everyday entry point and knows nothing about the controller above it.

A task reaches the session's context through :class:`TaskSource`, which the controller adds to
every session it creates or registers: the session's next build shows its pending tasks in the
instructions (pinned, oldest first), and a completed or cancelled task leaves it. The text only
changes when the list does, so between hand-outs it stays in the provider's cached prefix.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from loomctx.errors import ConfigError
from loomctx.items import ContextItem, Tier
from loomctx.sources.protocol import BaseSource, SourceRequest

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
    """The tasks of every session of one controller, in the order they were given."""

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


__all__ = ["MAX_SHOWN", "TASKS_SOURCE", "Task", "TaskBoard", "TaskSource", "TaskStatus"]
