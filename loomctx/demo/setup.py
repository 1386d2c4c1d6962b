"""Wiring for the SQL demo: a Session with the static and the per-turn sources, and a replay.

:func:`sql_demo` builds what an agent loop needs for one task: a database, its tools, and a
:class:`~loomctx.session.Session` whose sources are the task's static part
(:class:`~loomctx.retrieval.task.TaskContextSource`) and the per-turn block
(:class:`~loomctx.retrieval.dynamic.DynamicContextSource` over :class:`SchemaRetriever`),
already attached to the session's history. :func:`replay` plays a scripted scenario through it
without a model: build, take the next reply, run its tool calls, add the results, build again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from loomctx.builder import BuildOptions, BuildResult
from loomctx.demo.retriever import SchemaRetriever
from loomctx.demo.sales import create_database
from loomctx.demo.scenarios import Scenario, fill_result
from loomctx.demo.tools import TOOL_SCHEMAS, SalesTools
from loomctx.retrieval.dynamic import Assembly, DynamicContextSource, DynamicOptions
from loomctx.retrieval.task import TaskContextSource
from loomctx.session import Session

SYSTEM_PROMPT = ("You answer questions about a sales database. Use the tools to look at the "
                 "tables and to run read-only SQL, then answer briefly with the numbers.")
TASK_CONTEXT: Mapping[str, Any] = {"database": "sales", "dialect": "sqlite"}
STATIC_MAX_TOKENS = 12_000
"""The static part's own cap: 12,000 of a 16,000-token build (the per-turn block has 4,000)."""


@dataclass
class SqlDemo:
    """One task's session, its per-turn source and the tools it may call."""

    session: Session
    dynamic: DynamicContextSource
    tools: SalesTools


def sql_demo(question: str, *, db: str | os.PathLike[str] | None = None,
             model: str = "gpt-4o", dynamic: DynamicOptions | None = None,
             options: BuildOptions | None = None, **session_kwargs: Any) -> SqlDemo:
    """A session for ``question`` over the demo database (created when ``db`` is None).

    ``options`` default to ``model``; the retrieved block declares its share (4,000 of
    16,000 tokens), which a turn build's per-turn pool honours. Other keyword
    arguments go to :class:`~loomctx.session.Session` (``embedder``, ``clock``, ``events``...).
    """
    dyn_opts = dynamic or DynamicOptions()
    path = db if db is not None else create_database()
    dyn = DynamicContextSource(SchemaRetriever(), options=dyn_opts)
    task = TaskContextSource(question, phase="sql_generation", mode="read-only analysis",
                             task_context=TASK_CONTEXT, max_tokens=STATIC_MAX_TOKENS)
    opts = options or BuildOptions(model=model)
    session_kwargs.setdefault("system_prompt", SYSTEM_PROMPT)
    session = Session(tools=TOOL_SCHEMAS, sources=[dyn, task], options=opts, **session_kwargs)
    dyn.attach(session.memory.history)
    return SqlDemo(session=session, dynamic=dyn, tools=SalesTools(path))


@dataclass
class Step:
    """One simulated model call: the request built for it and what followed."""

    result: BuildResult
    """The context the model was shown."""
    assembly: Assembly | None
    """What the per-turn block retrieved and kept for this call (None when the source failed:
    the build report names the error)."""
    reply: Mapping[str, Any]
    """The scripted reply (``{result}`` filled with the last tool result)."""
    tool_results: list[str] = field(default_factory=list)
    """The tools' answers to the reply's calls, in order."""


def replay(scenario: Scenario, demo: SqlDemo, *, max_tokens: int = 16_000) -> list[Step]:
    """Play ``scenario`` through ``demo``'s session, one build per scripted reply."""
    s = demo.session
    s.add_message_sync("user", scenario.question)
    steps: list[Step] = []
    for scripted in scenario.replies:
        last = steps[-1].tool_results[-1] if steps and steps[-1].tool_results else None
        reply = fill_result(scripted, last)
        result = s.build_sync(max_tokens=max_tokens)
        step = Step(result=result, assembly=demo.dynamic.last, reply=reply)
        steps.append(step)
        s.add_message_sync(**reply)
        for call in reply.get("tool_calls") or []:
            fn = call["function"]
            out = demo.tools.call(fn["name"], json.loads(fn["arguments"] or "{}"))
            step.tool_results.append(out)
            s.add_message_sync("tool", out, tool_call_id=call["id"])
    return steps


__all__ = ["STATIC_MAX_TOKENS", "SYSTEM_PROMPT", "TASK_CONTEXT",
           "SqlDemo", "Step", "replay", "sql_demo"]
