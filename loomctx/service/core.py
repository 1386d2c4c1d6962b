"""The service's state and its one operation: turn a request into a built context.

:class:`Service` owns the store, the embedder, the event bus and every tenant's sessions. The
proxy and the HTTP API both go through it: find or open the session a request belongs to, store
the messages that are new, and build the context for the upstream's window minus the output
reserve. Forwarding is the proxy's (:mod:`loomctx.service.proxy`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from loomctx.budget.manager import BudgetManager
from loomctx.bus.inprocess import InProcessEventBus
from loomctx.bus.protocol import EventBus
from loomctx.embed.default import default_embedder
from loomctx.embed.protocol import Embedder
from loomctx.errors import BudgetError, ConfigError, InputError
from loomctx.events import Event, EventSink
from loomctx.memory.tiers import MemoryOptions
from loomctx.options import BuildOptions
from loomctx.service.checks import check_session_id, check_value
from loomctx.service.conversations import (
    BuildRecord,
    Conversation,
    RequestTools,
    Tenants,
    hashes,
    new_id,
    seed,
    text_size,
)
from loomctx.service.options import DEFAULT_WINDOW, FALLBACK_ENCODING, ServiceOptions
from loomctx.session import Session, SessionState
from loomctx.stores.urls import open_store
from loomctx.text.messages import content_text
from loomctx.tokens.chat import ChatCounter
from loomctx.tokens.registry import counter_for_model

log = logging.getLogger("loomctx.service")

MIN_BUDGET = 16
CONVERSATION_MEMORY = MemoryOptions(l2_shared=False, agent_memory=False)
"""A proxied conversation recalls only its own memory: a tenant's conversations may be
different end users of one application, so nothing crosses between them by default."""


class _Fanout:
    """The sink sessions emit to: the service's bus, and the caller's sink if any."""

    def __init__(self, bus: EventBus, extra: EventSink | None) -> None:
        self.bus, self.extra = bus, extra

    def emit(self, event: Event) -> None:
        self.bus.emit(event)
        if self.extra is not None and self.extra is not self.bus:
            self.extra.emit(event)


class Service:
    """Sessions, builds and events of every tenant, behind one set of options."""

    def __init__(self, options: ServiceOptions) -> None:
        self.options = options
        self.store = (options.store_factory() if options.store_factory is not None
                      else open_store(options.store))
        self.embedder: Embedder = (options.embedder if options.embedder is not None
                                   else default_embedder())
        given = options.events
        self.bus: EventBus = (given if isinstance(given, EventBus)  # type: ignore[assignment]
                              else InProcessEventBus())
        self.sink = _Fanout(self.bus, given)
        self.tenants = Tenants(max_builds=options.max_builds, max_sessions=options.max_sessions,
                               max_build_bytes=options.max_build_bytes,
                               max_session_bytes=options.max_session_bytes)

    # -- sessions ---------------------------------------------------------------------------
    def open(self, tenant: str, fmt: str, model: str, *, session_id: str | None = None,
             system: str | None = None, register: bool = True) -> Conversation:
        """A new session for ``tenant`` building ``fmt`` requests for ``model``; with
        ``register`` false it is not the tenant's until :meth:`adopt` (a request refused
        before then leaves no session behind)."""
        if session_id is not None:
            check_session_id(session_id)
            if self.tenants.session(tenant, session_id) is not None:
                raise InputError(f"session {session_id!r} exists already", where="session")
        name = self.options.model or model
        if not isinstance(name, str) or not name.strip():
            raise InputError(f"model must be a non-empty string, got {name!r}", where="model")
        check_value([name, system], "model")
        options = BuildOptions(model=name, format=fmt, fallback_encoding=FALLBACK_ENCODING)
        known = counter_for_model(name, fallback=FALLBACK_ENCODING).context_window
        window = self.options.window or known or DEFAULT_WINDOW
        tools = RequestTools()
        session = Session(session_id or new_id("s-"), tenant=tenant, agent="proxy",
                          store=self.store, embedder=self.embedder, options=options,
                          budget=BudgetManager(window=window), events=self.sink,
                          sources=[tools], memory=CONVERSATION_MEMORY,
                          system_prompt=system or "")
        conv = Conversation(session=session, format=fmt, tools=tools, seed=seed(system))
        if register:
            self.adopt(tenant, conv)
        return conv

    def adopt(self, tenant: str, conv: Conversation) -> None:
        """Make a session :meth:`open` made unregistered the tenant's."""
        self.tenants.add_session(tenant, conv)
        self.tenants.index(tenant, conv, None)

    def window(self, conv: Conversation) -> int:
        w = conv.session.context_window
        return w if w is not None else DEFAULT_WINDOW

    def route(self, tenant: str, fmt: str, model: str, system: str | None,
              messages: Sequence[Mapping[str, Any]], session_id: str | None,
              ) -> tuple[Conversation, list[Mapping[str, Any]], str | None, bool]:
        """The session a proxy request belongs to, its messages not stored yet, the head that
        slice was computed against (None in session-header mode, where all are new), and
        whether the session is new (not the tenant's until :meth:`adopt`).

        With a session id (the ``X-Loomctx-Session`` header) every message is new and the
        session is created on first use. Without, the request is the whole conversation: the
        session whose stored messages are its longest prefix continues, and only the rest is
        new; no match (a branch from an older point, an ended session) starts a new session.
        """
        if session_id is not None:
            conv = self.tenants.session(tenant, session_id)
            if conv is None:
                return (self.open(tenant, fmt, model, session_id=session_id, system=system,
                                  register=False), list(messages), None, True)
            if conv.format != fmt:
                raise InputError(f"session {session_id!r} builds {conv.format} requests: "
                                 f"use its endpoint, or another session id", where="session")
            return conv, list(messages), None, False
        chained = self.tenants.resends(tenant).hashes(seed(system), messages)
        found = self.tenants.find(tenant, chained)
        if found is not None and found[0].format == fmt and \
                found[0].session.state is not SessionState.ENDED:
            conv, n = found
            return conv, list(messages[n:]), conv.head, False
        conv = self.open(tenant, fmt, model, system=system, register=False)
        conv.anonymous = True
        return conv, list(messages), conv.head, True

    @staticmethod
    def unseen(conv: Conversation, new: Sequence[Mapping[str, Any]],
               ) -> list[Mapping[str, Any]]:
        """``new`` less a resend: when the session's stored messages already end with exactly
        ``new`` and no reply followed them (the last one is not the assistant's), the request
        is a client's retry of a turn that failed (a 429, a 5xx, a timeout), not the user
        saying it all again; nothing of it is stored twice."""
        k = len(new)
        if not k or len(conv.chain) < k or new[-1].get("role") == "assistant":
            return list(new)
        start = conv.chain[-k - 1] if len(conv.chain) > k else conv.seed
        return [] if hashes(start, new) == conv.chain[-k:] else list(new)

    async def store_messages(self, tenant: str, conv: Conversation,
                             messages: Sequence[Mapping[str, Any]]) -> None:
        """Add messages to the session and to its fingerprint chain."""
        if not messages:
            return
        await conv.session.add_messages(messages)
        old_head = conv.head
        conv.extend(messages)
        self.tenants.index(tenant, conv, old_head)
        self.tenants.grew(tenant, conv, text_size(messages))

    # -- building ---------------------------------------------------------------------------
    def reserve(self, conv: Conversation, asked: int | None) -> int:
        """The output reserve: the request's ``max_tokens``, else the configured reserve, at
        most a quarter of the window (a small local model's window stays mostly prompt)."""
        if asked is not None:
            return asked
        return min(self.options.output_tokens, self.window(conv) // 4)

    def budget(self, conv: Conversation, output_tokens: int, asked: int | None) -> int:
        """The prompt budget: the window minus the output reserve (shrunk by the conversation's
        measured ``undercount``), at most the configured budget and ``X-Loomctx-Budget``."""
        room = self.window(conv) - output_tokens
        if conv.undercount > 1.0:  # the upstream counts more than loomctx: leave it room
            room = int(room / conv.undercount)
        for cap in (self.options.budget, asked):
            if cap is not None:
                room = min(room, cap)
        if room < MIN_BUDGET:
            raise InputError(f"max_tokens {output_tokens} leaves {room} tokens of the "
                             f"{self.window(conv)}-token window for the prompt: ask for fewer "
                             "output tokens or a larger budget", where="max_tokens")
        return room

    @staticmethod
    def check_fits(conv: Conversation, budget: int, system: str | None,
                   new: Sequence[Mapping[str, Any]]) -> None:
        """Refuse, before anything is stored, a request whose pinned part cannot fit
        ``budget``: the system prompt, the tool definitions and the new user input, counted
        as the upstream would plus the format's least framing. A lower bound of what the build
        pins, so it refuses only what the build would refuse too (after storing the turn)."""
        last = next((m for m in reversed(new) if m.get("role") == "user"), None)
        text = content_text(last.get("content")) if last is not None else ""
        chat = ChatCounter(conv.session.memory.counter, "openai")
        try:
            need = (conv.session.least_framing()
                    + chat.messages([{"role": "user", "content": text}] if text else [],
                                    conv.tools.definitions, system=system or None))
        except (ConfigError, ValueError, TypeError, KeyError) as exc:
            # Nothing this estimate can read is refused on its word: the build decides.
            log.debug("no pinned-size estimate for session %s: %s", conv.session.id, exc)
            return
        if need > budget:
            raise BudgetError(f"pinned (P0) content (system prompt, tools, the new input) needs "
                              f"at least {need} tokens but the budget allows {budget}: raise "
                              "max_tokens or X-Loomctx-Budget, or shorten the system prompt / "
                              "input", required=need, available=budget)

    async def build(self, tenant: str, conv: Conversation, budget: int, *,
                    query: str | None = None, retried: bool = False) -> BuildRecord:
        result = await conv.session.build(query, max_tokens=budget)
        record = BuildRecord(id=new_id("b-"), tenant=tenant, session=conv.session.id,
                             at=time.time(), report=result.report, payload=result.payload,
                             retried=retried)
        conv.builds.append(record.id)
        self.tenants.add_build(record)
        return record

    async def aclose(self) -> None:
        if isinstance(self.bus, InProcessEventBus):
            await self.bus.aclose(drain=False)


__all__ = ["MIN_BUDGET", "Service"]
