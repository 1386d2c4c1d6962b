"""``Session``: the everyday entry point — add messages, build a context for each LLM call.

A session owns its memory tiers (L1 window, L2 important, L4 archive in the store) and its
builder. ``add_message`` writes through to the store; ``build`` runs the whole pipeline with the
history, important memories, unified retrieval, the agent's memory from its other sessions (L3
summaries and facts, their L4 copies: ``MemoryOptions.agent_memory``; the shared L2 pool:
``MemoryOptions.l2_shared``), and any system prompt, tools, skills and knowledge the session
was given. Lifecycle: ACTIVE → PAUSED → ACTIVE … → ENDED.

The turn loop of an agent::

    await s.add_message("user", text)          # the user's message
    result = await s.build(max_tokens=8000)    # input = that message, shown once
    ...call the model with result.payload...
    await s.add_message("assistant", None, tool_calls=[...])
    await s.add_message("tool", output, tool_call_id="c1")
    result = await s.build(max_tokens=8000)    # history only appended: the cache stays warm

Every I/O method is async (``add_message``, ``add_messages``, ``build``, ``end``) and has a sync
twin with the same name plus ``_sync``; both work inside and outside a running event loop (the
sync form runs the coroutine on a private loop, in a worker thread when a loop is running).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from typing import Any

from loomctx._sync import run_sync, strict_async
from loomctx.budget.manager import AdaptiveBudgetManager, BudgetManager
from loomctx.builder import BuildOptions, BuildResult, ContextBuilder
from loomctx.compress.history import SUMMARY_SCAN
from loomctx.compress.summarize import ExtractiveSummarizer
from loomctx.embed.cache import CachedEmbedder, worth_storing
from loomctx.embed.default import default_embedder
from loomctx.embed.protocol import Embedder
from loomctx.errors import ConfigError
from loomctx.events import EventSink, NullSink, SessionEnded, SessionPaused, SessionResumed
from loomctx.items import ContextItem
from loomctx.memory.importance import ImportanceScorer
from loomctx.memory.tiers import MemoryOptions, TieredMemory
from loomctx.retrieval.agent_memory import AgentMemorySource
from loomctx.retrieval.shared import SharedL2Source
from loomctx.retrieval.source import L2ImportantSource, UnifiedRetrievalSource
from loomctx.sources.knowledge import KnowledgeSource
from loomctx.sources.protocol import ContextSource, check_source
from loomctx.sources.skills import Skill, SkillSource
from loomctx.sources.static import SystemPromptSource, UserInputSource
from loomctx.sources.tools import ToolSource
from loomctx.stores.memory import InMemoryStore
from loomctx.stores.protocol import DEFAULT_TENANT, MemoryRecord, MemoryStore
from loomctx.stores.urls import open_store
from loomctx.tasks import TaskHolder
from loomctx.tokens.registry import counter_for_model


class SessionState(str, Enum):
    ACTIVE = "active"
    PAUSED = "paused"
    ENDED = "ended"


class Session(TaskHolder):
    """A conversation with tiered memory and a context builder; it takes tasks itself
    (:meth:`add_task`, from :class:`~loomctx.tasks.TaskHolder`)."""

    def __init__(
        self, id: str | None = None, *, agent: str = "agent", tenant: str = DEFAULT_TENANT,
        store: MemoryStore | str | None = None, embedder: Embedder | None = None,
        model: str | None = None, system_prompt: str = "",
        tools: Sequence[Mapping[str, Any]] = (), skills: Sequence[Skill] = (),
        knowledge: Sequence[KnowledgeSource] = (), sources: Sequence[ContextSource] = (),
        memory: MemoryOptions | None = None, options: BuildOptions | None = None,
        budget: BudgetManager | None = None, importance: ImportanceScorer | None = None,
        events: EventSink | None = None, clock: Callable[[], float] = time.time,
    ) -> None:
        self.id = id or uuid.uuid4().hex[:12]
        self.agent = agent
        self.tenant = tenant
        self.state = SessionState.ACTIVE
        self.clock = clock
        self.events = events if events is not None else NullSink()
        # A str is a store URL (postgresql://, sqlite:///path, memory://): configuration only.
        self.store: MemoryStore = (open_store(store) if isinstance(store, str) else
                                   store if store is not None else InMemoryStore())
        inner = embedder if embedder is not None else default_embedder()
        self.embedder = inner if isinstance(inner, CachedEmbedder) else CachedEmbedder(
            inner, store=self.store if worth_storing(inner) else None, tenant=tenant)
        if options is not None and model is not None and options.model != model:
            raise ConfigError(f"model={model!r} disagrees with options.model={options.model!r}:"
                              " pass one of them")
        opts = options or BuildOptions(model=model or "gpt-4o")
        # Memory counts with the builder's tokenizer (resolved and cached once per model).
        tokenizer = counter_for_model(opts.model, fallback=opts.fallback_encoding)
        self._staged = False
        """Whether the history ends with messages :meth:`stage` showed (not stored)."""
        self.memory = TieredMemory(self.store, self.embedder, tokenizer.counter,
                                   session=self.id, agent=agent, options=memory,
                                   importance=importance, events=self.events, tenant=tenant)
        self._prompt = SystemPromptSource(system_prompt)
        built_in: list[Any] = [self._prompt, UserInputSource(),
                               self.memory.history,
                               # retrieval before L2: in a turn, a memory both find is kept
                               # with its relevance to the message, not only its importance
                               UnifiedRetrievalSource(self.memory, knowledge),
                               L2ImportantSource(self.memory)]
        mem = self.memory.options
        if mem.l2_shared:
            built_in.append(SharedL2Source(self.store, self.embedder, tenant=tenant,
                                           agent=agent, session=self.id, ttl=mem.l2_shared_ttl,
                                           own=lambda: len(self.memory.l2_ids)))
        if mem.agent_memory and not any(getattr(s, "name", None) == "L3_agent"
                                        for s in sources):
            built_in.append(AgentMemorySource(self.store, self.embedder, tenant=tenant,
                                              agent=agent, l4=mem.agent_memory_l4,
                                              session=self.id, min_score=mem.min_score))
        if tools:
            built_in.append(ToolSource(tools))
        if skills:
            built_in.append(SkillSource(skills))
        self.builder = ContextBuilder([*built_in, *sources], options=opts, budget=budget,
                                      events=self.events, session=self.id, tenant=tenant)
        if budget is None:
            # The builder's default shares, made phase-aware: a build given a phase (the
            # Agent passes one every turn) shifts them; without a phase they are unchanged.
            b = self.builder.budget
            self.builder.budget = AdaptiveBudgetManager(window=b.window, reserve=b.reserve,
                                                        ratios=b.ratios, limits=b.limits)

    def add_source(self, source: ContextSource) -> None:
        """Add a source to the session's builds from the next build on (a controller adds the
        session's tasks this way); its name must be new to the session. A ``share`` it
        declares is not applied: the shares are fixed when the session is made."""
        check_source(source)
        taken = [s.name for s in self.builder.sources]
        if source.name in taken:
            raise ConfigError(f"the session already has a source named {source.name!r}: give "
                              f"the new one another name (taken: {taken!r})")
        self.builder.sources.append(source)

    # -- what the builds are made for -----------------------------------------------------
    @property
    def model(self) -> str:
        """The model the builds are counted and rendered for."""
        return self.builder.options.model

    @property
    def context_window(self) -> int | None:
        """Tokens of the model's window the build budget is drawn from (None: unknown, so a
        build needs ``max_tokens``)."""
        return self.builder.budget.window

    @property
    def system_prompt(self) -> str:
        """The instructions at the top of every build; set it to change them from the next
        build on (a proxy follows the client's system prompt this way)."""
        return self._prompt.text

    @system_prompt.setter
    def system_prompt(self, text: str) -> None:
        if not isinstance(text, str):
            raise ConfigError(f"system_prompt must be a string, got {text!r:.80}")
        self._prompt.text = text

    def least_framing(self) -> int:
        """Tokens every turn build of this session spends on framing, whatever it holds: the
        format's fixed part and the headers of the sections a turn always frames (the history
        summary's, the output instructions'). A lower bound, for a check made before anything
        is stored."""
        opts = self.builder.options
        always = frozenset({"state"} if opts.summarize_history else set()) | \
            frozenset({"output"} if opts.output_instructions else set())
        return self.builder.renderer.overhead(always)

    # -- writing ---------------------------------------------------------------------------
    def _check_active(self) -> None:
        if self.state is not SessionState.ACTIVE:
            raise ConfigError(f"session {self.id!r} is {self.state.value}: resume() it first"
                              if self.state is SessionState.PAUSED else
                              f"session {self.id!r} has ended: start a new Session")

    @strict_async
    async def add_message(
        self, role: str, content: Any = None, *, id: str | None = None,
        timestamp: float | str | None = None, tool_calls: Sequence[Mapping[str, Any]] | None
        = None, tool_call_id: str | None = None, name: str | None = None,
    ) -> str:
        """Add one message (OpenAI fields); returns its id (given or generated)."""
        return (await self.add_messages([_message(role, content, id, timestamp, tool_calls,
                                                  tool_call_id, name)]))[0]

    def add_message_sync(
        self, role: str, content: Any = None, *, id: str | None = None,
        timestamp: float | str | None = None, tool_calls: Sequence[Mapping[str, Any]] | None
        = None, tool_call_id: str | None = None, name: str | None = None,
    ) -> str:
        """The same as :meth:`add_message`, for synchronous callers."""
        return self.add_messages_sync([_message(role, content, id, timestamp, tool_calls,
                                                tool_call_id, name)])[0]

    @strict_async
    async def add_messages(self, messages: Sequence[Mapping[str, Any]]) -> list[str]:
        """Add many messages at once (one store transaction, one embedding batch); the
        embedding and the store write run in a worker thread, off the event loop."""
        self._check_active()
        return await asyncio.to_thread(self._add, messages)

    @strict_async
    def add_messages_sync(self, messages: Sequence[Mapping[str, Any]]) -> list[str]:
        """The same as :meth:`add_messages`, for synchronous callers."""
        self._check_active()
        return self._add(messages)

    def _add(self, messages: Sequence[Mapping[str, Any]]) -> list[str]:
        if self._staged:
            raise ConfigError(f"session {self.id!r} has staged messages: unstage() them "
                              "before adding messages")
        return self.memory.add(self._with_ids(messages), now=self.clock())

    def _with_ids(self, messages: Sequence[Mapping[str, Any]]) -> list[Any]:
        """Copies of ``messages``, each with an id (the given one, else a new one)."""
        prepared = []
        for m in messages:
            m = dict(m) if isinstance(m, Mapping) else m
            if isinstance(m, dict) and not m.get("id"):
                m["id"] = f"{self.id}:{uuid.uuid4().hex[:10]}"
            prepared.append(m)
        return prepared

    def stage(self, messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Show ``messages`` to the next builds without storing them; returns them with their
        ids, to be stored later with :meth:`add_messages` (after :meth:`unstage`).

        For a turn that must be stored whole or not at all: a proxy builds the context with
        the user's new messages, and stores them only together with the model's reply, so
        an upstream that fails leaves the session exactly as it was (nothing to take back
        from the store, the tiers or their indexes). Staged messages are in the history a
        build renders (the input is the last staged user message) but in no store, tier or
        retrieval index. One batch at a time; :class:`InputError` as :meth:`add_messages`
        would raise it (a :class:`~loomctx.errors.TooLargeError` for a message over
        ``MemoryOptions.max_message_chars`` too), changing nothing."""
        self._check_active()
        if self._staged:
            raise ConfigError(f"session {self.id!r} has staged messages already: unstage() "
                              "them first")
        prepared = self._with_ids(messages)
        if prepared:
            items = self.memory.history.extend(prepared)
            try:
                self.memory.check_sizes((it.role, it.content) for it in items)
            except BaseException:
                self.memory.history.undo_extend()
                raise
            self._staged = True
        return prepared

    def unstage(self) -> None:
        """Take back what :meth:`stage` showed (nothing when nothing is staged)."""
        if self._staged:
            self._staged = False
            self.memory.history.undo_extend()

    # -- building --------------------------------------------------------------------------
    @strict_async
    async def build(self, query: str | None = None, *, max_tokens: int | None = None,
                    phase: str | None = None, now: float | None = None) -> BuildResult:
        """Build the context for the next LLM call.

        Without ``query`` this is a turn: the input is the history's last user message, shown
        once (text and images as given), and the history is an append-only window that keeps
        the provider's prompt cache warm. With ``query``, a question that is not in the
        history: it is the input and drives retrieval.
        """
        if self.state is SessionState.ENDED:
            raise ConfigError(f"session {self.id!r} has ended: start a new Session")
        return await self.builder.build(query, max_tokens=max_tokens, phase=phase,
                                        now=self.clock() if now is None else now)

    def build_sync(self, query: str | None = None, **kwargs: Any) -> BuildResult:
        """The same as :meth:`build`, for synchronous callers."""
        return run_sync(self.build(query, **kwargs), name="build")

    # -- lifecycle -------------------------------------------------------------------------
    def pause(self) -> None:
        self._check_active()
        self.state = SessionState.PAUSED
        self.events.emit(SessionPaused(tenant=self.tenant, session=self.id, agent=self.agent,
                                       at=self.clock()))

    def resume(self) -> None:
        self._refuse_ended("resume")
        if self.state is SessionState.PAUSED:
            self.state = SessionState.ACTIVE
            self.events.emit(SessionResumed(tenant=self.tenant, session=self.id,
                                            agent=self.agent, at=self.clock()))

    def _refuse_ended(self, doing: str) -> None:
        if self.state is SessionState.ENDED:
            raise ConfigError(f"session {self.id!r} has ended, it cannot {doing}: start a new "
                              "Session")

    @strict_async
    async def end(self, *, summary_tokens: int = 300) -> str | None:
        """End the session: write an L3 summary for the agent, move L1/L2 to L4.

        The summary is extractive, over the session's important (L2) memories and its most
        recent messages (at most ``SUMMARY_SCAN`` × ``summary_tokens`` tokens of them). Returns
        the summary record id (None for an empty session or one already ended).
        """
        if self.state is SessionState.ENDED:
            return None
        self.state = SessionState.ENDED
        records = sorted(self.memory.records.values(), key=lambda r: (r.timestamp, r.seq))
        if not records:
            self.events.emit(SessionEnded(tenant=self.tenant, session=self.id,
                                          summary_id=None, at=self.clock(), agent=self.agent))
            return None
        picked = [r for r in records if r.level == "L2"]
        budget = SUMMARY_SCAN * summary_tokens * 4  # characters, ~4 a token
        for r in reversed(records):
            if budget <= 0:
                break
            if r.level != "L2":
                picked.append(r)
                budget -= len(r.content)
        picked.sort(key=lambda r: (r.timestamp, r.seq))
        as_items = [ContextItem(id=r.id, source="memory", content=r.content, role=r.role)
                    for r in picked]
        text = await ExtractiveSummarizer().summarize(as_items, summary_tokens,
                                                      self.memory.counter)
        sid = await asyncio.to_thread(self._archive, records, text)
        self.events.emit(SessionEnded(tenant=self.tenant, session=self.id, summary_id=sid,
                                      at=self.clock(), agent=self.agent))
        return sid

    def end_sync(self, *, summary_tokens: int = 300) -> str | None:
        """The same as :meth:`end`, for synchronous callers."""
        return run_sync(self.end(summary_tokens=summary_tokens), name="end")

    def _archive(self, records: Sequence[MemoryRecord], text: str) -> str | None:
        self.store.set_level([r.id for r in records if r.level in ("L1", "L2")], "L4",
                             scope=self.memory.scope)
        if not text:
            return None
        sid = f"{self.id}:summary"
        self.store.put([MemoryRecord(id=sid, content=text, level="L3", session=self.id,
                                     agent=self.agent, tenant=self.memory.scope.tenant,
                                     timestamp=self.clock(),
                                     importance=1.0, metadata={"kind": "session_summary"})],
                       self.embedder.embed([text]))
        return sid


def _message(role: str, content: Any, id: str | None, timestamp: float | str | None,
             tool_calls: Sequence[Mapping[str, Any]] | None, tool_call_id: str | None,
             name: str | None) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": role, "content": content}
    if tool_calls is not None:
        msg["tool_calls"] = list(tool_calls) if isinstance(tool_calls, (list, tuple)) \
            else tool_calls
    for key, value in (("id", id), ("timestamp", timestamp), ("tool_call_id", tool_call_id),
                       ("name", name)):
        if value is not None:
            msg[key] = value
    return msg


__all__ = ["Session", "SessionState", "default_embedder"]
