"""Many sessions of one agent: tasks, one context over several sessions, the agent's L3 memory,
and its persistence to L4 through the event bus."""

from loomctx.controller.controller import ContextController, SessionInfo, tokens_by_session
from loomctx.controller.persist import L4Persister
from loomctx.controller.sources import AgentMemorySource, SessionSource, session_of
from loomctx.controller.tasks import Task, TaskBoard, TaskSource, TaskStatus

__all__ = [
    "AgentMemorySource",
    "ContextController",
    "L4Persister",
    "SessionInfo",
    "SessionSource",
    "Task",
    "TaskBoard",
    "TaskSource",
    "TaskStatus",
    "session_of",
    "tokens_by_session",
]
