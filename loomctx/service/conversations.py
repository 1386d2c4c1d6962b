"""The sessions a service holds for its tenants, and the builds they made.

Everything here is keyed by tenant first: a lookup takes the tenant the caller's key maps to,
so no route can reach another tenant's session, build or conversation by naming its id (an
unknown id and another tenant's id are the same 404).

A :class:`Conversation` is one :class:`~loomctx.session.Session` plus what the proxy needs
around it: the request's system prompt and tool definitions (replaced by every request, since
clients resend them), a lock (one request at a time per session, so memory stays in order), and
the fingerprint chain of the messages stored, which tells which messages of a
whole-conversation request are new.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loomctx.items import ContextItem, Tier
from loomctx.report import BuildReport
from loomctx.service.convert import chain, fingerprint
from loomctx.session import Session
from loomctx.sources.protocol import BaseSource, SourceRequest
from loomctx.sources.tools import normalize_tool

CHARS_PER_TOKEN = 4
"""How a kept build's size is estimated from its token count (English text averages ~4)."""


class RequestTools(BaseSource):
    """The tool definitions of the latest request, all pinned: a model must see every tool
    the client offers, or it could not call the one the conversation needs."""

    def __init__(self) -> None:
        self.name = "tools"
        self._items: list[ContextItem] = []
        self._key: list[Any] = []

    def set(self, tools: Sequence[Mapping[str, Any]]) -> None:
        if list(tools) == self._key:
            return  # unchanged: keep the items (and the builder's cached costs)
        normalized = [normalize_tool(t, where=f"tools[{i}]") for i, t in enumerate(tools)]
        self._key = list(tools)
        self._items = [ContextItem(id=f"tool:{t['function']['name']}", source=self.name,
                                   content=t["function"]["name"], kind="tool", tier=Tier.P0,
                                   priority=1.0, metadata={"schema": t}, seq=i)
                       for i, t in enumerate(normalized)]

    @property
    def given(self) -> list[Any]:
        """The definitions as they were set (before normalizing)."""
        return list(self._key)

    @property
    def definitions(self) -> list[Mapping[str, Any]]:
        """The definitions in the OpenAI shape, as normalized."""
        return [it.metadata["schema"] for it in self._items]

    eager = True  # answers from memory

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        return self._items


@dataclass(frozen=True, kw_only=True)
class Usage:
    """What the upstream reported for one forwarded request."""

    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int


@dataclass(kw_only=True)
class BuildRecord:
    """One build the service made (by the proxy or the API) and what became of it."""

    id: str
    tenant: str
    session: str
    at: float
    report: BuildReport
    payload: Mapping[str, Any]
    retried: bool = False
    """The upstream refused the first build as too long; this is the smaller rebuild."""
    usage: Usage | None = None
    reply_stored: bool | None = None
    """None for an API build (nothing forwarded)."""
    note: str | None = None
    """What went wrong, if something did (refused as too long, a reply not remembered)."""
    size: int = 0
    """Estimated characters of ``payload`` (:data:`CHARS_PER_TOKEN` per token the build
    counted), set when the service keeps the record."""

    def to_dict(self, *, payload: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id, "session": self.session, "at": self.at, "retried": self.retried,
            "tokens": self.report.tokens, "budget": self.report.budget,
            "reused_prefix_tokens": self.report.reused_prefix_tokens,
            "usage": None if self.usage is None else vars(self.usage),
            "reply_stored": self.reply_stored, "note": self.note}
        if payload:
            out["payload"] = self.payload
            out["report"] = self.report.to_dict()
        return out


@dataclass(kw_only=True)
class Conversation:
    """A session and the proxy's bookkeeping around it."""

    session: Session
    format: str
    tools: RequestTools
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """One request at a time; on a PostgreSQL store a
    :class:`~loomctx.service.shared_lock.SharedLock`, which holds the session in every process."""
    chain: list[str] = field(default_factory=list)
    """Fingerprint chain of the stored messages, one entry per message."""
    anonymous: bool = False
    """Started by a whole-conversation request (no session id): only such sessions continue
    by content; a named session is reached by its id alone."""
    undercount: float = 1.0
    """The largest ratio seen of the upstream's measured prompt tokens to the build's own
    count (1 when loomctx counts as the upstream does); prompt budgets are divided by it, so a
    model loomctx counts low (a fallback encoding) does not run into the window."""
    cap: int | None = None
    """A budget the upstream forced (it refused a larger request as too long)."""
    seed: str = ""
    """The chain's start: a digest of the system prompt the conversation began with, so two
    conversations with the same messages under different instructions stay apart."""
    builds: list[str] = field(default_factory=list)
    created: float = field(default_factory=time.time)
    size: int = 0
    """Text size of the messages stored through this session (:func:`text_size`)."""
    saved_tools: list[Any] = field(default_factory=list)
    """The tool definitions the shared store's row holds, as far as this copy knows."""
    users: int = 0
    """Requests the service routed to this session that are not over (holding its lock or
    waiting for it): a session in use is never unloaded."""
    version: int = -1
    """The session's version in the shared store when this copy was loaded or last locked
    (:mod:`loomctx.service.shared`); -1: not loaded under the lock yet."""

    @property
    def head(self) -> str:
        return self.chain[-1] if self.chain else self.seed

    def extend(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """Record messages as stored."""
        for m in messages:
            self.chain.append(chain(self.head, fingerprint(m)))

    def info(self) -> dict[str, Any]:
        s = self.session
        return {"id": s.id, "state": s.state.value, "format": self.format,
                "model": s.model, "messages": len(self.chain),
                "builds": len(self.builds), "created": self.created}


PARKED_KEPT = 10_000
"""Unloaded sessions a tenant's :class:`Tenants` remembers the settings of, on a store of one
process (least recently unloaded forgotten first)."""


@dataclass(frozen=True, kw_only=True)
class Parked:
    """An unloaded session, as much as reloading it needs besides what the store holds (its
    messages): on a store of one process nothing else remembers its format, system prompt,
    tools, chain seed and head, so without it a resent conversation would start a new session
    and its id would answer 404. About 300 bytes; its messages stay in the store only."""

    id: str
    format: str
    model: str
    system: str
    seed: str
    head: str
    before: str | None
    """The chain hash before the last message (a retry of the last turn ends there)."""
    anonymous: bool
    state: str
    undercount: float
    cap: int | None
    created: float
    tools: list[Any]
    builds: list[str]
    messages: int

    def info(self) -> dict[str, Any]:
        return {"id": self.id, "state": self.state, "format": self.format, "model": self.model,
                "messages": self.messages, "builds": len(self.builds),
                "created": self.created}


class Tenants:
    """Conversations and builds, partitioned by tenant."""

    def __init__(self, *, max_builds: int, max_sessions: int = 1_000,
                 max_build_bytes: int | None = None, max_session_bytes: int | None = None,
                 ) -> None:
        self.max_builds = max_builds
        self.max_sessions = max_sessions
        self.max_build_bytes = max_build_bytes
        self.max_session_bytes = max_session_bytes
        self._sessions: dict[str, OrderedDict[str, Conversation]] = {}
        """tenant → its loaded sessions, least recently used first."""
        self._session_bytes: dict[str, int] = {}
        self._builds: dict[str, OrderedDict[str, BuildRecord]] = {}
        self._build_bytes: dict[str, int] = {}
        self._heads: dict[str, dict[str, set[str]]] = {}
        """tenant → chain hash → the sessions whose stored messages end there."""
        self._resends: dict[str, Resends] = {}
        self.parks = True
        """Whether unloaded sessions are remembered as :class:`Parked` (a store of one
        process; a shared store's rows do it for every process)."""
        self._parked: dict[str, OrderedDict[str, Parked]] = {}
        self._parked_heads: dict[str, dict[str, str]] = {}
        """tenant → chain head → the parked anonymous session that ends there."""
        self._befores: dict[str, dict[str, str]] = {}
        """tenant → the chain hash before a session's last message → that session (loaded or
        parked, anonymous): a retry of the session's last turn ends there."""
        self._before_of: dict[str, dict[str, str]] = {}

    def resends(self, tenant: str) -> Resends:
        """The tenant's memory of its latest whole-conversation requests (their hashes)."""
        found = self._resends.get(tenant)
        if found is None:
            found = self._resends[tenant] = Resends()
        return found

    def sessions(self, tenant: str) -> dict[str, Conversation]:
        return self._sessions.setdefault(tenant, OrderedDict())

    def session(self, tenant: str, session_id: str) -> Conversation | None:
        loaded = self._sessions.get(tenant)
        conv = loaded.get(session_id) if loaded is not None else None
        if conv is not None and loaded is not None:
            loaded.move_to_end(session_id)
        return conv

    def add_session(self, tenant: str, conv: Conversation) -> None:
        """Load ``conv``; past ``max_sessions`` the tenant's least recently used idle session
        is unloaded (its memory stays in the store, its settings are :class:`Parked`: it loads
        again on its next request, named or resent whole)."""
        loaded = self._sessions.setdefault(tenant, OrderedDict())
        old = loaded.get(conv.session.id)
        if old is conv:
            loaded.move_to_end(conv.session.id)
            return
        if old is not None:
            self._unload(tenant, conv.session.id, old)
        loaded[conv.session.id] = conv
        self._session_bytes[tenant] = self._session_bytes.get(tenant, 0) + conv.size
        self.trim(tenant, conv)

    def grew(self, tenant: str, conv: Conversation, size: int) -> None:
        """``conv`` stored ``size`` more bytes of messages; unload idle sessions past
        ``max_session_bytes``."""
        conv.size += size
        loaded = self._sessions.get(tenant)
        if loaded is not None and loaded.get(conv.session.id) is conv:
            self._session_bytes[tenant] = self._session_bytes.get(tenant, 0) + size
            self.trim(tenant, conv)

    def loaded_bytes(self, tenant: str) -> int:
        """Message bytes of the tenant's loaded sessions."""
        return self._session_bytes.get(tenant, 0)

    def trim(self, tenant: str, keep: Conversation) -> None:
        """Unload the least recently used idle sessions (never ``keep``) while the tenant is
        over ``max_sessions`` or ``max_session_bytes``."""
        loaded = self._sessions.get(tenant, OrderedDict())
        cap = self.max_session_bytes
        for sid, old in list(loaded.items()):
            if len(loaded) <= self.max_sessions and (cap is None
                                                     or self.loaded_bytes(tenant) <= cap):
                break
            if old is not keep and not old.users and not old.lock.locked():
                self._unload(tenant, sid, old)

    def drop(self, tenant: str, conv: Conversation) -> None:
        """Unload ``conv`` (a session a failed request created: it never held anything)."""
        sid, loaded = conv.session.id, self._sessions.get(tenant)
        if loaded is not None and loaded.get(sid) is conv:
            self._unload(tenant, sid, conv, park=False)

    def _unload(self, tenant: str, sid: str, conv: Conversation, *, park: bool = True) -> None:
        if park and self.parks:
            self._park(tenant, conv)
        else:
            self._set_before(tenant, sid, None)
        del self._sessions[tenant][sid]
        self._session_bytes[tenant] = self._session_bytes.get(tenant, 0) - conv.size
        heads = self._heads.get(tenant, {})
        if conv.head in heads:
            heads[conv.head].discard(sid)
            if not heads[conv.head]:
                del heads[conv.head]

    def _park(self, tenant: str, conv: Conversation) -> None:
        s = conv.session
        parked = self._parked.setdefault(tenant, OrderedDict())
        heads = self._parked_heads.setdefault(tenant, {})
        entry = Parked(id=s.id, format=conv.format, model=s.model, system=s.system_prompt,
                       seed=conv.seed, head=conv.head, anonymous=conv.anonymous,
                       before=self._before_of.get(tenant, {}).get(s.id),
                       state=s.state.value, undercount=conv.undercount, cap=conv.cap,
                       created=conv.created, tools=conv.tools.given, builds=list(conv.builds),
                       messages=len(conv.chain))
        parked[s.id] = entry
        if conv.anonymous and conv.chain and entry.state != "ended":
            heads[entry.head] = s.id
        if entry.state == "ended":
            self._set_before(tenant, s.id, None)
        while len(parked) > PARKED_KEPT:
            self.unpark(tenant, next(iter(parked)))

    def parked(self, tenant: str, session_id: str) -> Parked | None:
        """The unloaded session ``session_id`` of ``tenant``, if it is remembered."""
        parked = self._parked.get(tenant)
        return parked.get(session_id) if parked is not None else None

    def find_parked(self, tenant: str, hashes: Sequence[str]) -> tuple[str, int] | None:
        """The parked anonymous session whose head is the latest of ``hashes``, and how many
        of them it holds (as :meth:`find` does for loaded ones)."""
        heads = self._parked_heads.get(tenant, {})
        for n in range(len(hashes), 0, -1):
            sid = heads.get(hashes[n - 1])
            if sid is not None:
                return sid, n
        return None

    def unpark(self, tenant: str, session_id: str) -> Parked | None:
        """Forget a parked session (it is being loaded again, or the oldest of too many)."""
        parked = self._parked.get(tenant)
        entry = parked.pop(session_id, None) if parked is not None else None
        heads = self._parked_heads.get(tenant, {})
        if entry is not None and heads.get(entry.head) == session_id:
            del heads[entry.head]
        if entry is not None:
            self._set_before(tenant, session_id, None)
        return entry

    def index(self, tenant: str, conv: Conversation, old_head: str | None) -> None:
        """Record that ``conv``'s head moved from ``old_head`` (None: a new session)."""
        heads = self._heads.setdefault(tenant, {})
        sid = conv.session.id
        if old_head is not None and old_head in heads:
            heads[old_head].discard(sid)
            if not heads[old_head]:
                del heads[old_head]
        heads.setdefault(conv.head, set()).add(sid)
        self._set_before(tenant, sid, conv.chain[-2] if conv.anonymous and len(conv.chain) > 1
                         else None)

    def _set_before(self, tenant: str, sid: str, before: str | None) -> None:
        befores = self._befores.setdefault(tenant, {})
        of = self._before_of.setdefault(tenant, {})
        old = of.pop(sid, None)
        if old is not None and befores.get(old) == sid:
            del befores[old]
        if before is not None:
            befores[before], of[sid] = sid, before

    def find_retry(self, tenant: str, last: str) -> str | None:
        """The anonymous session (loaded or parked) whose stored messages, less the last one,
        end with the chain hash ``last``: a request ending there may be the retry of that
        session's last turn (:meth:`~loomctx.service.core.Service.stored_reply` decides)."""
        return self._befores.get(tenant, {}).get(last)

    def find(self, tenant: str, hashes: Sequence[str]) -> tuple[Conversation, int] | None:
        """The conversation whose stored messages are the longest prefix of ``hashes`` (its
        head is there, so the rest are new), with that prefix's length.

        Only heads are indexed: a prefix that ends inside a session's history (a branch from an
        older message) or in another session that said the same things is no continuation.
        Named sessions (created with an id) are never continued this way.
        """
        heads = self._heads.get(tenant, {})
        for n in range(len(hashes), 0, -1):
            for sid in sorted(heads.get(hashes[n - 1], ())):
                conv = self.session(tenant, sid)
                if conv is not None and conv.anonymous and conv.head == hashes[n - 1]:
                    return conv, n
        return None

    def add_build(self, record: BuildRecord) -> None:
        """Keep ``record``; past ``max_builds`` or ``max_build_bytes`` the tenant's oldest
        builds are forgotten (the newest is always kept)."""
        tenant = record.tenant
        record.size = CHARS_PER_TOKEN * record.report.tokens  # no walk over the payload
        builds = self._builds.setdefault(tenant, OrderedDict())
        builds[record.id] = record
        total = self._build_bytes.get(tenant, 0) + record.size
        cap = self.max_build_bytes
        while len(builds) > 1 and (len(builds) > self.max_builds
                                   or (cap is not None and total > cap)):
            total -= builds.popitem(last=False)[1].size
        self._build_bytes[tenant] = total

    def kept_build_bytes(self, tenant: str) -> int:
        """Payload bytes of the tenant's kept builds."""
        return self._build_bytes.get(tenant, 0)

    def build(self, tenant: str, build_id: str) -> BuildRecord | None:
        builds = self._builds.get(tenant)
        return builds.get(build_id) if builds is not None else None

    def builds_of(self, tenant: str, session_id: str) -> list[BuildRecord]:
        conv = self.session(tenant, session_id)
        builds: Mapping[str, BuildRecord] = self._builds.get(tenant) or {}
        return [builds[b] for b in (conv.builds if conv else []) if b in builds]


def text_size(value: Any) -> int:
    """The size of a JSON-like value as the characters of its strings (keys too), 8 per other
    scalar: an estimate of what holding it costs, cheap enough for every request (a string
    value is counted in place), and iterative so that deep nesting cannot overflow the stack.
    """
    total, stack = 0, [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            total += len(v)
        elif isinstance(v, Mapping):
            for k, item in v.items():
                total += len(k) if isinstance(k, str) else 8
                if isinstance(item, str):
                    total += len(item)
                else:
                    stack.append(item)
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        else:
            total += 8
    return total


def seed(system: str | None) -> str:
    """The chain seed of a conversation under ``system``."""
    return chain("", fingerprint({"role": "system", "content": system or ""}))


def hashes(start: str, messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """The chain hashes of ``messages`` after ``start``."""
    out, head = [], start
    for m in messages:
        head = chain(head, fingerprint(m))
        out.append(head)
    return out


RESENDS_KEPT = 32
"""Whole-conversation requests a tenant's :class:`Resends` remembers (least recent forgotten)."""


class Resends:
    """The chain hashes of a tenant's latest whole-conversation requests, so that the next
    request of the same conversation (the last one sent back with the reply and a new message)
    hashes only what it adds: its leading messages that equal, as parsed JSON, the messages of
    a remembered request have that request's hashes. The rest are hashed as :func:`hashes`
    does, so the result is the same, in time proportional to what is new.

    Keyed by the chain's seed and its first message's hash (conversations that begin alike
    share a slot: the longest equal prefix wins); at most :data:`RESENDS_KEPT` requests are
    kept, each as the list of its message objects (shared with the request, not copied).
    """

    def __init__(self, kept: int = RESENDS_KEPT) -> None:
        self.kept = kept
        self._recent: OrderedDict[tuple[str, str], list[tuple[list[Any], list[str]]]] = \
            OrderedDict()

    def hashes(self, start: str, messages: Sequence[Mapping[str, Any]]) -> list[str]:
        """``hashes(start, messages)``, reusing the longest remembered equal prefix."""
        if not messages:
            return []
        first = hashes(start, messages[:1])
        key = (start, first[0])
        slot = self._recent.get(key, [])
        best, best_n = None, 1
        for entry in slot:
            sent = entry[0]
            top = min(len(sent), len(messages))
            if sent[:top] == messages[:top]:  # the usual case, compared in one C loop
                n = max(1, top)
            else:
                n = 1
                while n < top and sent[n] == messages[n]:
                    n += 1
            if n > best_n or best is None:
                best, best_n = entry, n
        if best is None:
            out = first + hashes(first[0], messages[1:])
        else:
            known = best[1][:best_n]
            out = known + hashes(known[-1], messages[best_n:])
            slot.remove(best)
        slot.append((list(messages), out))
        del slot[:-4]  # a few conversations per first message
        self._recent[key] = slot
        self._recent.move_to_end(key)
        while len(self._recent) > self.kept:
            self._recent.popitem(last=False)
        return out


def new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:16]}"


__all__ = ["CHARS_PER_TOKEN", "PARKED_KEPT", "RESENDS_KEPT", "BuildRecord", "Conversation",
           "Parked", "RequestTools", "Resends", "Tenants", "Usage", "hashes", "new_id", "seed",
           "text_size"]
