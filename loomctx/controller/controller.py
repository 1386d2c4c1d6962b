"""``ContextController``: many sessions of one agent over one store, and the agent's L3 memory.

The controller creates and registers the sessions of one agent (same store, same embedder),
keeps their tasks, hands tasks out (to all sessions or to those a predicate picks), and keeps the
agent-level memory (L3): the summaries ``Session.end`` writes and cross-session facts, recalled
by every session of the agent through :class:`AgentMemorySource` and by nothing else.

``aggregate_context`` builds ONE context from several sessions: one builder whose sources are
one :class:`SessionSource` per session (plus the agent's L3), so their candidates are gathered
concurrently, ranked on one scale and packed under one budget (no source has a share of its
own: every token goes to the best next candidate, whichever session it comes from), and the
report names each item's session in its source (``session:<id>``). With ``remember=True`` the
aggregate is also written to the agent's L3 (what several sessions found, kept across
sessions): one record per question and set of sessions, holding what went in, which
every session of the agent then recalls. It is opt-in because an aggregate is usually a read:
written on every call, near-identical digests would crowd the agent's memory.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from loomctx.budget.manager import BudgetManager
from loomctx.builder import BuildOptions, BuildResult, ContextBuilder
from loomctx.controller.sources import AgentMemorySource, SessionSource, session_of
from loomctx.controller.tasks import Task, TaskBoard, TaskStatus
from loomctx.embed.cache import CachedEmbedder, worth_storing
from loomctx.embed.default import default_embedder
from loomctx.embed.protocol import Embedder
from loomctx.errors import ConfigError
from loomctx.events import EventSink
from loomctx.items import fingerprint
from loomctx.report import BuildReport
from loomctx.retrieval.shared import SharedL2Source
from loomctx.session import Session, SessionState
from loomctx.sources.static import UserInputSource
from loomctx.stores.protocol import DEFAULT_TENANT, MemoryRecord, MemoryStore, check_name


@dataclass(frozen=True, kw_only=True)
class SessionInfo:
    """What a distribution predicate sees of a session."""

    id: str
    """The session id."""
    state: SessionState
    """Its lifecycle state."""
    metadata: Mapping[str, Any]
    """The metadata it was registered with."""
    pending: int
    """How many of its tasks are pending."""


class ContextController:
    """The sessions of one agent of one tenant, over one shared store."""

    def __init__(self, agent: str, *, store: MemoryStore, tenant: str = DEFAULT_TENANT,
                 embedder: Embedder | None = None, model: str = "gpt-4o",
                 events: EventSink | None = None) -> None:
        self.agent = check_name(agent, "agent", optional=False) or agent
        self.tenant = check_name(tenant, "tenant", optional=False) or tenant
        self.store = store
        inner = embedder if embedder is not None else default_embedder()
        self.embedder = inner if isinstance(inner, CachedEmbedder) else CachedEmbedder(
            inner, store=store if worth_storing(inner) else None, tenant=tenant)
        self.model = model
        self.events = events
        """The sink (an event bus) every session it creates emits to, unless given another;
        an :class:`~loomctx.controller.persist.L4Persister` on that bus persists L3 → L4."""
        self.sessions: dict[str, Session] = {}
        """Registered sessions by id, in the order they were registered."""
        self.metadata: dict[str, dict[str, Any]] = {}
        self.tasks = TaskBoard()
        self.agent_memory = AgentMemorySource(store, self.embedder, tenant=tenant, agent=agent)
        """The agent's L3 memory as a source (each Session has its own, by default)."""

    # -- sessions --------------------------------------------------------------------------
    def create_session(self, id: str | None = None, *, metadata: Mapping[str, Any] | None = None,
                       **session_options: Any) -> Session:
        """A new session of this agent on this store; like every Session it recalls the
        agent's L3 memory (``MemoryOptions.agent_memory``), and it shows its tasks.

        ``session_options`` go to :class:`Session` (system_prompt, tools, memory, options...);
        ``agent``, ``tenant``, ``store`` and ``embedder`` are the controller's own.
        """
        fixed = {"agent", "tenant", "store", "embedder"} & set(session_options)
        if fixed:
            raise ConfigError(f"{sorted(fixed)!r} are set by the controller: create another "
                              "ContextController for another agent, tenant or store")
        if "options" not in session_options:  # BuildOptions carry their own model
            session_options.setdefault("model", self.model)
        if self.events is not None:
            session_options.setdefault("events", self.events)
        session = Session(id or uuid.uuid4().hex[:12], agent=self.agent, tenant=self.tenant,
                          store=self.store, embedder=self.embedder, **session_options)
        return self.register(session, metadata=metadata)

    def register(self, session: Session, *, metadata: Mapping[str, Any] | None = None
                 ) -> Session:
        """Manage an existing session; it must belong to this agent, tenant and store."""
        if (session.agent, session.tenant) != (self.agent, self.tenant) \
                or session.store is not self.store:
            raise ConfigError(f"session {session.id!r} belongs to agent {session.agent!r} of "
                              f"tenant {session.tenant!r}: a controller manages only agent "
                              f"{self.agent!r} of tenant {self.tenant!r} on its own store")
        if session.id in self.sessions and self.sessions[session.id] is not session:
            raise ConfigError(f"another session with id {session.id!r} is registered: "
                              "give the new one another id")
        session.use_tasks(self.tasks)  # its own tasks move to the shared board
        self.sessions[session.id] = session
        self.metadata[session.id] = dict(metadata or {})
        return session

    def _get(self, session: Session | str) -> Session:
        sid = session if isinstance(session, str) else session.id
        if sid not in self.sessions:
            raise ConfigError(f"session {sid!r} is not registered with this controller: "
                              f"create_session() or register() it (known: {list(self.sessions)!r})")
        return self.sessions[sid]

    def info(self, session: Session | str) -> SessionInfo:
        s = self._get(session)
        return SessionInfo(id=s.id, state=s.state, metadata=self.metadata[s.id],
                           pending=len(self.tasks.of(s.id, TaskStatus.PENDING)))

    async def end_session(self, session: Session | str, *, summary_tokens: int = 300
                          ) -> str | None:
        """End a session (its summary becomes L3 memory of the agent); its pending tasks are
        cancelled. Returns the summary record id, as :meth:`Session.end` does."""
        s = self._get(session)
        summary = await s.end(summary_tokens=summary_tokens)
        s.cancel_pending_tasks()
        self._memory_changed()
        return summary

    def _memory_changed(self) -> None:
        """The agent's memory changed here: its sessions read it again at their next build
        (without waiting for their sources' refresh)."""
        self.agent_memory.invalidate()
        for s in self.sessions.values():
            for source in s.builder.sources:
                if isinstance(source, AgentMemorySource | SharedL2Source):
                    source.invalidate()

    # -- tasks -----------------------------------------------------------------------------
    def add_task(self, session: Session | str, task: Task | str, *,
                 metadata: Mapping[str, Any] | None = None) -> Task:
        """Give one task to one session (a str is its description); an ended session refuses."""
        s = self._get(session)
        if s.state is SessionState.ENDED:
            raise ConfigError(f"session {s.id!r} has ended: give the task to an active session")
        return s.add_task(task, metadata=metadata)

    def complete_task(self, session: Session | str, task_id: str) -> Task:
        return self._get(session).complete_task(task_id)

    def distribute_task(self, task: Task | str, sessions: Iterable[Session | str] | None = None,
                        predicate: Callable[[SessionInfo], bool] | None = None) -> list[str]:
        """Give ``task`` to every session (or to ``sessions``) that has not ended and that
        ``predicate`` accepts; returns the ids of the sessions that got it, in order. Each of
        them shows it in its next build (:class:`~loomctx.controller.tasks.TaskSource`)."""
        t = task if isinstance(task, Task) else Task(description=task)
        targets = [self._get(s) for s in (self.sessions.values() if sessions is None
                                          else sessions)]
        given = []
        for s in targets:
            if s.state is SessionState.ENDED:
                continue
            if predicate is not None and not predicate(self.info(s)):
                continue
            s.add_task(t)
            given.append(s.id)
        return given

    # -- L3: the agent's memory ------------------------------------------------------------
    def add_fact(self, text: str, *, id: str | None = None, importance: float = 1.0,
                 now: float = 0.0) -> str:
        """Store a cross-session fact at agent scope (L3); returns its id."""
        if not isinstance(text, str) or not text.strip():
            raise ConfigError(f"a fact needs non-empty text, got {text!r}")
        fid = id or f"fact:{uuid.uuid4().hex[:10]}"
        self.store.put([MemoryRecord(id=fid, content=text, level="L3", agent=self.agent,
                                     tenant=self.tenant, timestamp=now, importance=importance,
                                     metadata={"kind": "fact"})], self.embedder.embed([text]))
        self._memory_changed()
        return fid

    def recall(self, query: str, limit: int = 10) -> list[MemoryRecord]:
        """The agent's L3 records (summaries and facts) for ``query``, best first."""
        return [r for r, _ in self.agent_memory.recall(query, limit)]

    # -- one context over many sessions ----------------------------------------------------
    async def aggregate_context(self, sessions: Iterable[Session | str] | None, query: str,
                                budget: int, *, include_agent_memory: bool = True,
                                options: BuildOptions | None = None, remember: bool = False,
                                now: float | None = None) -> BuildResult:
        """One context for ``query`` from several sessions (all registered when None), under
        one ``budget`` of tokens; each item's report source is ``session:<id>`` (or L3). The
        query is the request's user input (pinned, last), so the result is a request the model
        can be sent in every format, also when the sessions are fresh and hold nothing yet.

        ``remember=True`` stores what the sessions contributed as one L3 record of the agent
        (id ``aggregate:<hash of the query and sessions>``: asking again replaces it), kind
        ``aggregate``, timestamped ``now`` (default: the current time)."""
        if not isinstance(query, str) or not query.strip():
            raise ConfigError(f"aggregate_context needs a non-empty query, got {query!r}")
        chosen = [self._get(s) for s in (self.sessions.values() if sessions is None
                                         else sessions)]
        if not chosen:
            raise ConfigError("aggregate_context needs at least one session")
        per_session = [SessionSource(s) for s in chosen]
        sources: list[Any] = [*per_session, UserInputSource()]
        if include_agent_memory:
            sources.append(self.agent_memory)
        builder = ContextBuilder(sources, options=options or BuildOptions(model=self.model),
                                 budget=BudgetManager(ratios={}), tenant=self.tenant)
        at = time.time() if now is None else now
        result = await builder.build(query, max_tokens=budget, now=at)
        if remember:
            await asyncio.to_thread(self._remember_aggregate, query, chosen, per_session,
                                    result.report, at)
        return result

    def _remember_aggregate(self, query: str, chosen: list[Session],
                            sources: list[SessionSource], report: BuildReport,
                            now: float) -> str | None:
        """Write the sessions' included items (whole, in report order) as one L3 record."""
        collected = {k: v for src in sources for k, v in src.collected.items()}
        rows = sorted((it for it in report.items if it.included and it.id in collected),
                      key=lambda it: it.position if it.position is not None else 0)
        if not rows:
            return None
        sids = sorted(s.id for s in chosen)
        text = "\n".join(f"[{collected[r.id].metadata['session']}] {collected[r.id].content}"
                         for r in rows)
        rid = f"aggregate:{fingerprint(query + '|' + ','.join(sids))[:16]}"
        self.store.put([MemoryRecord(
            id=rid, content=text, level="L3", agent=self.agent, tenant=self.tenant,
            timestamp=now, importance=0.7,
            metadata={"kind": "aggregate", "query": query, "sessions": sids})],
            self.embedder.embed([text]))
        self._memory_changed()
        return rid


def tokens_by_session(report: BuildReport) -> dict[str, int]:
    """Tokens of included items per session id (from ``session:<id>`` sources)."""
    out: dict[str, int] = {}
    for it in report.items:
        sid = session_of(it.source)
        if sid is not None and it.included:
            out[sid] = out.get(sid, 0) + (it.tokens or 0)
    return out


__all__ = ["ContextController", "SessionInfo", "tokens_by_session"]
