"""Tasks of sessions: the names a controller's users import from here.

The task model lives in :mod:`loomctx.tasks` (below the sessions, since a
:class:`~loomctx.session.Session` takes tasks itself); the controller shares one
:class:`TaskBoard` among the sessions it manages.
"""

from loomctx.tasks import MAX_SHOWN, TASKS_SOURCE, Task, TaskBoard, TaskSource, TaskStatus

__all__ = ["MAX_SHOWN", "TASKS_SOURCE", "Task", "TaskBoard", "TaskSource", "TaskStatus"]
