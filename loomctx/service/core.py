"""The service's state and its one operation: turn a request into a built context.

:class:`Service` owns the store, the embedder, the event bus and every tenant's sessions. The
proxy and the HTTP API both go through it: find or open the session a request belongs to, store
the messages that are new, and build the context for the upstream's window minus the output
reserve. Forwarding is the proxy's (:mod:`loomctx.service.proxy`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
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
    Parked,
    RequestTools,
    Tenants,
    hashes,
    new_id,
    seed,
    text_size,
)
from loomctx.service.lock_lines import Held
from loomctx.service.options import DEFAULT_WINDOW, FALLBACK_ENCODING, ServiceOptions
from loomctx.service.replay import REPLAY_WINDOW
from loomctx.service.shared import SharedSessions, info_of, is_shared_url
from loomctx.service.shared_lock import SharedLock
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


LOCK_WAIT_TIMEOUTS = 3
"""Upstream timeouts a request waits for a session another process holds (its holder may
call the upstream twice: a rebuild after a refusal as too long)."""


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
        self._memory = replace(CONVERSATION_MEMORY,
                               max_message_chars=options.max_message_chars)
        self.shared: SharedSessions | None = (
            SharedSessions(options.store, max_builds=options.max_builds,
                           lock_wait=LOCK_WAIT_TIMEOUTS * options.timeout,
                           lock_lines=options.lock_lines)
            if options.store_factory is None and is_shared_url(options.store) else None)
        """Locks, sessions and builds shared with other processes on a PostgreSQL store
        (:mod:`loomctx.service.shared`); None on SQLite or in memory (one process)."""
        self.tenants.parks = self.shared is None
        self._creating: dict[tuple[str, str], Conversation] = {}
        """Named sessions whose first requests are in flight, not the tenant's yet:
        concurrent first requests of one id share one (create-or-load) instead of each
        making its own."""

    async def start(self) -> None:
        """Connect what needs the event loop (the shared store's pool and lock lines);
        before any request."""
        if self.shared is not None:
            await self.shared.open()

    # -- sessions ---------------------------------------------------------------------------
    def open(self, tenant: str, fmt: str, model: str, *, session_id: str | None = None,
             system: str | None = None, register: bool = True) -> Conversation:
        """A new session for ``tenant`` building ``fmt`` requests for ``model``; with
        ``register`` false it is not the tenant's until :meth:`adopt` (a request refused
        before then leaves no session behind)."""
        if session_id is not None:
            check_session_id(session_id)
            if self.tenants.session(tenant, session_id) is not None or \
                    self.tenants.parked(tenant, session_id) is not None:
                raise InputError(f"session {session_id!r} exists already", where="session")
        name = self.options.model or model
        if not isinstance(name, str) or not name.strip():
            raise InputError(f"model must be a non-empty string, got {name!r}", where="model")
        check_value([name, system], "model")
        conv = self._conversation(tenant, fmt, name, session_id or new_id("s-"), system)
        if register:
            self.adopt(tenant, conv)
        return conv

    def _conversation(self, tenant: str, fmt: str, name: str, session_id: str,
                      system: str | None) -> Conversation:
        """A session (resumed from the store if it holds it) and its bookkeeping."""
        options = BuildOptions(model=name, format=fmt, fallback_encoding=FALLBACK_ENCODING)
        known = counter_for_model(name, fallback=FALLBACK_ENCODING).context_window
        window = self.options.window or known or DEFAULT_WINDOW
        tools = RequestTools()
        session = Session(session_id, tenant=tenant, agent="proxy",
                          store=self.store, embedder=self.embedder, options=options,
                          budget=BudgetManager(window=window), events=self.sink,
                          sources=[tools], memory=self._memory,
                          system_prompt=system or "")
        conv = Conversation(session=session, format=fmt, tools=tools, seed=seed(system))
        if self.shared is not None:
            conv.lock = SharedLock(self.shared, tenant, conv, self._reload, self._flush)
        return conv

    def adopt(self, tenant: str, conv: Conversation) -> None:
        """Make a session :meth:`open` made unregistered the tenant's (again: a no-op)."""
        if self.tenants.session(tenant, conv.session.id) is not conv:
            self.tenants.add_session(tenant, conv)
            self.tenants.index(tenant, conv, None)

    def forget(self, tenant: str, conv: Conversation) -> None:
        """Undo :meth:`adopt` of a session whose first request failed before anything of it
        was stored (on a shared store no row was written for it either); kept while other
        requests :meth:`route` handed it to are not :meth:`done`: they will store in it."""
        if conv.users == 0:
            self.tenants.drop(tenant, conv)

    def done(self, tenant: str, conv: Conversation) -> None:
        """A request :meth:`route` handed ``conv`` to is over (stored, failed, or never took
        the session's lock): once per routed request, before :meth:`forget`."""
        conv.users -= 1
        key = (tenant, conv.session.id)
        if conv.users == 0 and self._creating.get(key) is conv:
            del self._creating[key]

    def window(self, conv: Conversation) -> int:
        w = conv.session.context_window
        return w if w is not None else DEFAULT_WINDOW

    async def route(self, tenant: str, fmt: str, model: str, system: str | None,
              messages: Sequence[Mapping[str, Any]], session_id: str | None,
              ) -> tuple[Conversation, list[Mapping[str, Any]], str | None, bool]:
        """The session a proxy request belongs to, its messages not stored yet, the head that
        slice was computed against (None in session-header mode, where all are new), and
        whether the session is new (not the tenant's until :meth:`adopt`).

        With a session id (the ``X-Loomctx-Session`` header) every message is new and the
        session is created on first use: concurrent first uses get the same new session,
        whose lock orders them (create-or-load). Without, the request is the whole conversation: the
        session whose stored messages are its longest prefix continues, and only the rest is
        new; no match (a branch from an older point, an ended session) starts a new session.

        On a shared store the session may be another process's: it is looked up there (and
        the head returned is the one found, which the caller checks again under the lock).

        The session counts the request among its ``users`` until the caller calls
        :meth:`done` (a session in use is never unloaded or forgotten).
        """
        conv, new, seen, fresh = await self._route(tenant, fmt, model, system, messages,
                                                   session_id)
        conv.users += 1
        return conv, new, seen, fresh

    async def _route(self, tenant: str, fmt: str, model: str, system: str | None,
                     messages: Sequence[Mapping[str, Any]], session_id: str | None,
                     ) -> tuple[Conversation, list[Mapping[str, Any]], str | None, bool]:
        if session_id is not None:
            conv = await self.session(tenant, session_id)
            if conv is None:
                conv = self._creating.get((tenant, session_id))
                if conv is None:
                    conv = self._creating[tenant, session_id] = self.open(
                        tenant, fmt, model, session_id=session_id, system=system,
                        register=False)
                return conv, list(messages), None, True
            if conv.format != fmt:
                raise InputError(f"session {session_id!r} builds {conv.format} requests: "
                                 f"use its endpoint, or another session id", where="session")
            return conv, list(messages), None, False
        chained = self.tenants.resends(tenant).hashes(seed(system), messages)
        if self.shared is not None:
            hit = await self.shared.find(tenant, fmt, chained)
            conv = None if hit is None else await self.session(tenant, hit[0])
            if conv is not None and hit is not None:
                return conv, list(messages[hit[1]:]), chained[hit[1] - 1], False
            found = None
            retried = None if not chained else await self.shared.find_retry(tenant, fmt,
                                                                              chained[-1])
        else:
            found = self.tenants.find(tenant, chained)
            parked = None if found is not None else self.tenants.find_parked(tenant, chained)
            if parked is not None:  # unloaded: loaded again from the store
                conv = await self.session(tenant, parked[0])
                if conv is not None and conv.head == chained[parked[1] - 1]:
                    found = conv, parked[1]
            retried = None if found is not None or not chained else \
                self.tenants.find_retry(tenant, chained[-1])
        if retried is not None:
            conv = await self.session(tenant, retried)
            k = -1 if conv is None else len(conv.chain)
            if conv is not None and conv.chain[-2:-1] == chained[-1:]:
                found = conv, len(chained)  # all but the reply of a stored turn: stored_reply
            elif conv is not None and k < len(chained) and (not k or
                                                            conv.head == chained[k - 1]):
                # A turn whose storing failed left its hashes and head in the shared row; the
                # session holds less, and the request continues what it holds (the lock's
                # holder cuts the hashes back).
                found = conv, k
        if found is not None and found[0].format == fmt and \
                found[0].session.state is not SessionState.ENDED:
            conv, n = found
            return conv, list(messages[n:]), conv.head, False
        conv = self.open(tenant, fmt, model, system=system, register=False)
        conv.anonymous = True
        return conv, list(messages), conv.head, True

    @staticmethod
    def stored_reply(conv: Conversation, messages: Sequence[Mapping[str, Any]],
                     new: Sequence[Mapping[str, Any]], seen: str | None, retry: bool | None,
                     ) -> Mapping[str, Any] | None:
        """The reply the session stored for this request, when the request is a retry of
        the session's last turn; None when it is not (it goes upstream).

        A retry is recognised by content, under the session's lock: the session's stored
        messages end with an assistant reply, stored at most
        :data:`~loomctx.service.replay.REPLAY_WINDOW` seconds ago, and the request is the
        same last user message following the same history. Resent whole (the request's
        ``messages`` routed to ``conv`` with nothing ``new``), the request is the stored
        conversation less that reply (a new turn would carry the reply). With
        ``X-Loomctx-Session`` (``seen`` None) the request's messages are exactly those stored
        just before that reply, and the request says it is a retry (``retry``: the OpenAI and
        Anthropic SDKs send ``x-stainless-retry-count`` 1, 2... when they send a request
        again): only new messages are sent in that mode, so the same text as a first attempt
        ("continue", "yes") is the user saying it again. An SDK's first attempt (``retry``
        False) is never a retry (a "regenerate" resends the history less the reply). A
        client whose connection was lost after the reply was stored, and whose SDK sends the
        request again, so gets that reply instead of a second upstream call and a second copy
        of its message."""
        items = conv.session.memory.history.items
        if not items or items[-1].role != "assistant" or items[-1].message is None:
            return None
        if retry is False:
            return None
        record = conv.session.memory.records.get(items[-1].id)
        if record is None or conv.session.clock() - record.timestamp > REPLAY_WINDOW:
            return None  # long after: the same request again is a new turn
        if seen is None:
            k = len(new)
            if not retry or not k or new[-1].get("role") == "assistant" or \
                    len(conv.chain) < k + 1:
                return None
            start = conv.chain[-k - 2] if len(conv.chain) > k + 1 else conv.seed
            return items[-1].message if hashes(start, new) == conv.chain[-k - 1:-1] else None
        if new or not messages or len(messages) != len(conv.chain) - 1 or \
                messages[-1].get("role") == "assistant":
            return None
        return items[-1].message

    @staticmethod
    def unseen(conv: Conversation, new: Sequence[Mapping[str, Any]],
               ) -> list[Mapping[str, Any]]:
        """``new`` less a resend: when the session's stored messages already end with exactly
        ``new`` and no reply followed them (the last one is not the assistant's), the request
        is a client's retry, not the user saying it all again; nothing of it is stored twice.
        A turn the upstream failed stores nothing (see the proxy), so this is the retry of one
        whose reply could not be stored (an empty reply), or of messages added by the API."""
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
        try:
            if self.shared is not None:  # the hashes first: see loomctx.service.shared
                new = hashes(conv.head, messages)
                await self.shared.will_store(tenant, self._row(conv, new[-1], len(messages)),
                                             len(conv.chain), new, _held(conv))
            await conv.session.add_messages(messages)
        except BaseException:
            # A write that failed may still have been committed (the server went away before
            # it answered): the next holder of the session reads it again from the store.
            conv.version = -1
            raise
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
        if self.shared is not None:  # its page is there before the client has its id
            await self.shared.save_builds([record], _held(conv))
        return record

    async def aclose(self) -> None:
        if isinstance(self.bus, InProcessEventBus):
            await self.bus.aclose(drain=False)
        if self.shared is not None:
            await self.shared.close()

    # -- shared with other processes (a PostgreSQL store) -----------------------------------
    async def session(self, tenant: str, session_id: str) -> Conversation | None:
        """The tenant's session ``session_id``: loaded here, else from the shared store."""
        conv = self.tenants.session(tenant, session_id)
        parked = None if conv is not None else self.tenants.unpark(tenant, session_id)
        if parked is not None:
            conv = await asyncio.to_thread(self._revive, tenant, parked)
            self.tenants.add_session(tenant, conv)
            self.tenants.index(tenant, conv, None)
        if conv is None and self.shared is not None:
            # Loaded while holding the session's lock when it is free: that copy is current
            # (its version holds); else one that taking the lock will reload (version -1).
            async with self.shared.peek(tenant, session_id) as held:
                row = await self.shared.row(tenant, session_id, held)
                if row is not None:
                    conv = await asyncio.to_thread(self._conversation, tenant, row["format"],
                                                   row["model"], session_id, row["system"])
                    await self._apply(tenant, conv, row, held)
                    if held is not None:
                        conv.version = row["version"]
            # A request that loaded or created it meanwhile: one copy (and lock) per process.
            loaded = self.tenants.session(tenant, session_id)
            if loaded is not None or conv is None:
                return loaded
            self.adopt(tenant, conv)
        return conv

    def _revive(self, tenant: str, parked: Parked) -> Conversation:
        """An unloaded session of a one-process store, loaded again: its messages from the
        store, its settings as it was unloaded, its chain hashed from the stored messages."""
        conv = self._conversation(tenant, parked.format, parked.model, parked.id,
                                  parked.system)
        conv.anonymous, conv.seed, conv.undercount = parked.anonymous, parked.seed, \
            parked.undercount
        conv.cap, conv.created, conv.builds = parked.cap, parked.created, list(parked.builds)
        conv.tools.set(parked.tools)
        if parked.state == SessionState.ENDED.value:
            conv.session.state = SessionState.ENDED
        items = conv.session.memory.history.items
        conv.chain = hashes(conv.seed, [it.message or {} for it in items])
        conv.size = sum(len(it.content) for it in items)
        return conv

    async def session_info(self, tenant: str, session_id: str) -> dict[str, Any] | None:
        """What ``GET /v1/loomctx/sessions/{id}`` shows, as the shared store has it."""
        if self.shared is None:
            conv = self.tenants.session(tenant, session_id)
            parked = self.tenants.parked(tenant, session_id) if conv is None else None
            return conv.info() if conv is not None else None if parked is None else \
                parked.info()
        row = await self.shared.row(tenant, session_id)
        return None if row is None else info_of(row)

    async def session_infos(self, tenant: str) -> list[dict[str, Any]]:
        if self.shared is None:
            return [c.info() for c in self.tenants.sessions(tenant).values()]
        return [info_of(r) for r in await self.shared.rows(tenant)]

    async def find_build(self, tenant: str, build_id: str) -> BuildRecord | None:
        record = self.tenants.build(tenant, build_id)
        if record is None and self.shared is not None:
            record = await self.shared.build(tenant, build_id)
        return record

    async def session_builds(self, tenant: str, session_id: str) -> list[BuildRecord]:
        if self.shared is None:
            return self.tenants.builds_of(tenant, session_id)
        return await self.shared.builds_of(tenant, session_id)

    async def publish(self, tenant: str, conv: Conversation) -> None:
        """Make a session :meth:`open` created visible to every process (before its first
        message); an id another process took already is refused."""
        if self.shared is None:
            return
        conv.version = 1
        if not await self.shared.insert(tenant, self._row(conv, conv.head, 0)):
            self.tenants.sessions(tenant).pop(conv.session.id, None)
            raise InputError(f"session {conv.session.id!r} exists already", where="session")

    def _row(self, conv: Conversation, head: str, adding: int) -> dict[str, Any]:
        """The shared row of ``conv`` with ``head``, ``adding`` messages on the way."""
        s = conv.session
        return {"id": s.id, "version": max(conv.version, 1), "format": conv.format,
                "anonymous": conv.anonymous, "seed": conv.seed, "head": head,
                "state": s.state.value, "model": s.model,
                "system": s.system_prompt, "undercount": conv.undercount, "cap": conv.cap,
                "created": conv.created, "messages": len(conv.chain) + adding,
                "builds": len(conv.builds), "tools": conv.tools.given}

    async def _reload(self, tenant: str, conv: Conversation) -> None:
        """Replace ``conv``'s loaded state by the store's (another process changed it)."""
        assert self.shared is not None
        held = _held(conv)
        row = await self.shared.row(tenant, conv.session.id, held)
        if row is None:
            return
        fresh = await asyncio.to_thread(self._conversation, tenant, row["format"], row["model"],
                                        conv.session.id, row["system"])
        old_head = conv.head
        conv.session, conv.tools = fresh.session, fresh.tools
        await self._apply(tenant, conv, row, held)
        self.tenants.index(tenant, conv, old_head)

    async def _apply(self, tenant: str, conv: Conversation, row: dict[str, Any],
                     held: Held | None) -> None:
        """Take ``row``'s settings, and the chain cut to the messages the store holds (in the
        shared store too when the session's lock is ``held``: unheld, the hashes past them
        may be those of a holder storing its messages right now)."""
        assert self.shared is not None
        sid = conv.session.id
        conv.format, conv.anonymous, conv.seed = row["format"], row["anonymous"], row["seed"]
        conv.undercount, conv.cap, conv.created = row["undercount"], row["cap"], row["created"]
        if row["state"] == SessionState.ENDED.value:
            conv.session.state = SessionState.ENDED
        conv.tools.set(row["tools"])  # set by POST /v1/loomctx/sessions or the last request
        conv.saved_tools = conv.tools.given
        items = conv.session.memory.history.items
        chained = await self.shared.chain(tenant, sid, held)
        if len(chained) > len(items):  # hashes of messages a dead process never stored
            chained = chained[:len(items)]
            if held is not None:
                await self.shared.cut(tenant, sid, len(items),
                                      chained[-1] if chained else conv.seed, held)
        elif len(chained) < len(items):  # not by this module; hashed as the store has them
            chained += hashes(chained[-1] if chained else conv.seed,
                              [it.message or {} for it in items[len(chained):]])
        conv.chain = chained
        if held is not None and (row["head"] != conv.head or row["messages"] != len(chained)):
            # a holder that could not save the row (the store failed as it let go)
            await self.shared.update(tenant, sid, {"head": conv.head,
                                                   "messages": len(chained)}, held)
        conv.builds = await self.shared.build_ids(tenant, sid, held)
        self.tenants.grew(tenant, conv, sum(len(it.content) for it in items) - conv.size)

    async def _flush(self, tenant: str, conv: Conversation, since: int, held: Held) -> None:
        """Save what a lock holder changed: its builds' outcomes and the session's row."""
        assert self.shared is not None
        records = [r for b in conv.builds[since:] if (r := self.tenants.build(tenant, b))]
        s = conv.session
        values: dict[str, Any] = {
            "head": conv.head, "messages": len(conv.chain), "builds": len(conv.builds),
            "state": s.state.value, "system": s.system_prompt, "undercount": conv.undercount,
            "cap": conv.cap}
        tools = conv.tools.given
        if tools != conv.saved_tools:  # written when they changed, not on every turn
            values["tools"] = conv.saved_tools = tools
        await self.shared.settle(tenant, s.id, records, values, held)


def _held(conv: Conversation) -> Held | None:
    """The connection holding ``conv``'s shared lock, if this process holds it."""
    return conv.lock.held if isinstance(conv.lock, SharedLock) else None


__all__ = ["LOCK_WAIT_TIMEOUTS", "MIN_BUDGET", "Service"]
