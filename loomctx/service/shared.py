"""What several ``loomctx serve`` processes share when their store is PostgreSQL.

One process keeps its sessions and builds in memory; processes behind one load balancer must
agree on them. Over a ``postgresql://`` store the service keeps in the same database:

- a lock per session: a PostgreSQL advisory lock, held from the moment a request takes the
  session until its reply is stored, so a session's turns are in order across processes; a
  process holds all of its locks on a few connections of its own
  (:mod:`loomctx.service.lock_lines`: no connection per request in flight); a process that
  dies loses its connections, and the server frees its locks; a request waits for a held
  session at most ``lock_wait`` seconds, then gets a 503;
- a row per session (format, system prompt, tool definitions, chain seed and head, state,
  counts) and a
  **version** every lock holder increments when it takes the lock: a process whose loaded copy
  is older than the row reloads the session from the store before it touches it (what another
  process, or one that died halfway, wrote is never overwritten from a stale copy);
- the fingerprint chain of every session, written *before* its messages are stored, and cut
  back to the messages the store holds when a session is reloaded (a process killed between
  the two leaves no message without its hash, and no hash without its message);
- every build record (report, built request, usage), so report pages work on any process;
- the page sign-ins ended by ``POST /logout`` (:mod:`.signouts`), refused by every process.

A single process on SQLite or in memory uses none of it: no round trip is added there.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from loomctx.report import BuildReport, ItemReport, SourceReport
from loomctx.service.conversations import BuildRecord, Usage
from loomctx.service.lock_lines import LOCK_LINES, Held, LockLines
from loomctx.service.web import ServiceError
from loomctx.stores._pg_pool import check_async_connection

log = logging.getLogger("loomctx.service")

Conn = psycopg.AsyncConnection[Any]

LOCK_POLL = (0.005, 0.1)
"""First and longest pause (seconds) between two tries of a session lock another holds."""
POOL_CONNECTIONS = 16
"""PostgreSQL connections a process opens for reading sessions' rows and builds it does not
hold (a statement at a time: none is kept for a request's upstream call); a request past them
waits up to 10 s, then gets a 503."""
TRIM_EVERY = 64
"""Builds saved between two trims of a tenant's kept builds to ``max_builds``."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS loomctx_proxy_sessions (
    tenant text NOT NULL, id text NOT NULL, version bigint NOT NULL,
    format text NOT NULL, anonymous boolean NOT NULL, seed text NOT NULL, head text NOT NULL,
    state text NOT NULL, model text NOT NULL, system text NOT NULL,
    undercount double precision NOT NULL DEFAULT 1, cap integer,
    created double precision NOT NULL, messages integer NOT NULL DEFAULT 0,
    builds integer NOT NULL DEFAULT 0, tools jsonb NOT NULL DEFAULT '[]'::jsonb,
    PRIMARY KEY (tenant, id));
ALTER TABLE loomctx_proxy_sessions ADD COLUMN IF NOT EXISTS tools jsonb NOT NULL
    DEFAULT '[]'::jsonb;
CREATE INDEX IF NOT EXISTS loomctx_proxy_sessions_head
    ON loomctx_proxy_sessions (tenant, head) WHERE anonymous;
CREATE TABLE IF NOT EXISTS loomctx_proxy_chain (
    tenant text NOT NULL, session text NOT NULL, n integer NOT NULL, hash text NOT NULL,
    PRIMARY KEY (tenant, session, n));
CREATE TABLE IF NOT EXISTS loomctx_proxy_builds (
    tenant text NOT NULL, id text NOT NULL, session text NOT NULL,
    at double precision NOT NULL, record jsonb NOT NULL,
    PRIMARY KEY (tenant, id));
ALTER TABLE loomctx_proxy_builds ADD COLUMN IF NOT EXISTS outcome jsonb;
ALTER TABLE loomctx_proxy_builds ALTER COLUMN record SET STORAGE EXTERNAL;
CREATE INDEX IF NOT EXISTS loomctx_proxy_chain_hash ON loomctx_proxy_chain (tenant, hash);
CREATE INDEX IF NOT EXISTS loomctx_proxy_builds_session
    ON loomctx_proxy_builds (tenant, session, at);
CREATE TABLE IF NOT EXISTS loomctx_proxy_signouts (
    signin text PRIMARY KEY, expires double precision NOT NULL);
"""
_SCHEMA_LOCK = 0x6C6F6F6D  # one process creates the tables at a time
_COLUMNS = ("id", "version", "format", "anonymous", "seed", "head", "state", "model", "system",
            "undercount", "cap", "created", "messages", "builds", "tools")
_JSON = frozenset({"tools"})
"""Columns of JSON values (sent wrapped as ``jsonb``; read back as Python values)."""


def _param(column: str, value: Any) -> Any:
    """A column's value as a statement parameter."""
    return Jsonb(value) if column in _JSON else value


_RECORD = "record || coalesce(outcome, '{}'::jsonb)"
"""A saved build's record as read: what :meth:`SharedSessions.save_builds` wrote, with what
:meth:`SharedSessions.settle` learnt after the upstream answered. The two are kept in columns
of their own: patching the record in place rewrote all of it (the built request, kilobytes
compressed again) a second time each turn."""


def _outcome(record: BuildRecord) -> str:
    """What becomes known of a saved build after the upstream answered, as JSON."""
    return json.dumps({"usage": None if record.usage is None else vars(record.usage),
                       "reply_stored": record.reply_stored, "note": record.note})


def lock_key(tenant: str, session: str) -> int:
    """The advisory lock id of a session (a signed 64-bit digest of tenant and id)."""
    digest = hashlib.blake2b(f"{tenant}\0{session}".encode("utf-8", "surrogatepass"),
                             digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def is_shared_url(store: str) -> bool:
    """Whether a store URL is one several processes can share (PostgreSQL)."""
    return store.startswith(("postgresql://", "postgres://"))


def record_from(data: dict[str, Any]) -> BuildRecord:
    """A :class:`BuildRecord` from what :meth:`BuildRecord.to_dict` (with payload) wrote."""
    r = data["report"]
    report = BuildReport(
        format=r["format"], model=r["model"], counter=r["counter"], exact=r["exact"],
        budget=r["budget"], tokens=r["tokens"], prefix_tokens=r["prefix_tokens"],
        prefix_hash=r["prefix_hash"], sources=[SourceReport(**s) for s in r["sources"]],
        timings_ms=r["timings_ms"], reused_prefix_tokens=r["reused_prefix_tokens"],
        reused_prefix_parts=r["reused_prefix_parts"],
        _items=[ItemReport(**i) for i in r["items"]])
    usage = data.get("usage")
    return BuildRecord(id=data["id"], tenant=data["tenant"], session=data["session"],
                       at=data["at"], report=report, payload=data["payload"],
                       retried=data["retried"], reply_stored=data["reply_stored"],
                       note=data["note"], usage=None if usage is None else Usage(**usage))


class SharedSessions:
    """Sessions' locks, rows, chains and builds in one PostgreSQL database (see the module)."""

    def __init__(self, url: str, *, max_builds: int, lock_wait: float = 900.0,
                 max_connections: int = POOL_CONNECTIONS, lock_lines: int = LOCK_LINES,
                 ) -> None:
        self.max_builds = max_builds
        self.lock_wait = lock_wait
        """Seconds a request waits for a session another process holds before a 503 (a
        holder is bounded by its upstream timeout; one stopped or cut off from the network
        keeps its lock until PostgreSQL notices its connection is gone)."""
        self._pool = AsyncConnectionPool(url, min_size=1, max_size=max_connections, open=False,
                                         kwargs={"autocommit": True}, timeout=10.0,
                                         check=check_async_connection,
                                         name="loomctx-proxy")
        self.locks = LockLines(url, lines=lock_lines)
        self._saved = 0

    async def open(self) -> None:
        try:
            await self._pool.open(wait=True, timeout=15.0)
        except PoolTimeout as exc:
            raise ServiceError(503, f"cannot connect to the shared PostgreSQL store: {exc}"
                               ) from exc
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", [_SCHEMA_LOCK])
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    await conn.execute(statement)
        await self.locks.open()

    async def close(self) -> None:
        await self.locks.close()
        await self._pool.close()

    @asynccontextmanager
    async def _connection(self, held: Held | None) -> AsyncIterator[Conn]:
        """The connection of ``held`` (a session lock this process holds: no pool checkout,
        and its statements fail if the lock was lost), else a pooled connection."""
        if held is not None:
            async with self.locks.using(held) as conn:
                yield conn
        else:
            async with self._pool.connection() as conn:
                yield conn

    async def _run(self, sql: str, args: Sequence[Any] = (), held: Held | None = None,
                   ) -> list[tuple[Any, ...]]:
        """One statement; its rows (none for a write)."""
        try:
            async with self._connection(held) as conn:
                cur = await conn.execute(sql, args)
                return await cur.fetchall() if cur.description else []
        except (psycopg.Error, PoolTimeout) as exc:
            raise ServiceError(503, f"the shared PostgreSQL store failed: "
                                    f"{type(exc).__name__}: {exc}") from exc

    # -- locks ------------------------------------------------------------------------------
    async def lock_and_bump(self, tenant: str, session: str) -> tuple[Held, int | None]:
        """Take the session's lock (give it back to :meth:`unlock`) and :meth:`bump` its
        version: one round trip when the session has a row.

        Tried again and again (backing off, holding no connection between tries) rather than
        waited for in the server, so a request cancelled while it waits leaves no waiter
        behind in PostgreSQL.

        One statement takes the lock and increments the version only if it took it. Its
        snapshot is older than the lock, which is right for a row another holder updated
        meanwhile (an update goes on from the newest version) but would miss one inserted
        meanwhile: so when it finds no row, :meth:`bump` looks again (new sessions only)."""
        held, rest = await self._take(
            tenant, session,
            "WITH l AS MATERIALIZED (SELECT pg_try_advisory_lock(%s) AS ok), "
            "v AS (UPDATE loomctx_proxy_sessions SET version = version + 1 "
            "WHERE tenant = %s AND id = %s AND (SELECT ok FROM l) RETURNING version) "
            "SELECT (SELECT ok FROM l), (SELECT version FROM v)", [tenant, session])
        try:
            version = rest[0] if rest else None
            if version is None:
                version = await self.bump(held, tenant, session)
        except BaseException:
            await asyncio.shield(self.unlock(held))
            raise
        return held, None if version is None else int(version)

    async def _take(self, tenant: str, session: str, sql: str, args: Sequence[Any],
                    ) -> tuple[Held, tuple[Any, ...]]:
        """The session's lock by ``sql`` (its first parameter the lock's key, then ``args``;
        see :meth:`LockLines.try_lock_with`), tried until it is free or ``lock_wait``."""
        key = lock_key(tenant, session)
        pause, deadline = LOCK_POLL[0], asyncio.get_running_loop().time() + self.lock_wait
        while True:
            held, rest = await self.locks.try_lock_with(key, sql, [key, *args])
            if held is not None:
                return held, rest
            if asyncio.get_running_loop().time() > deadline:
                raise ServiceError(503, f"session {session!r} has been busy in another "
                                        f"process for {self.lock_wait:g} s; send the "
                                        "request again later")
            await asyncio.sleep(pause)
            pause = min(LOCK_POLL[1], pause * 2)

    @asynccontextmanager
    async def peek(self, tenant: str, session: str) -> AsyncIterator[Held | None]:
        """The session's lock for a moment if it is free, else None: a load made while
        holding it is as current as one made by a request that holds it."""
        held = await self.locks.try_lock(lock_key(tenant, session))
        try:
            yield held
        finally:
            if held is not None:
                await self.locks.unlock(held)

    async def unlock(self, held: Held) -> None:
        """Free a lock :meth:`lock_and_bump` took."""
        await self.locks.unlock(held)

    async def bump(self, held: Held, tenant: str, session: str) -> int | None:
        """Increment the session's version (its lock is ``held``); the new version, None when
        no process stored the session yet."""
        rows = await self._run("UPDATE loomctx_proxy_sessions SET version = version + 1 "
                               "WHERE tenant = %s AND id = %s RETURNING version",
                               [tenant, session], held)
        return None if not rows else int(rows[0][0])

    # -- sessions ---------------------------------------------------------------------------
    async def row(self, tenant: str, session: str, held: Held | None = None,
                  ) -> dict[str, Any] | None:
        rows = await self._run(f"SELECT {', '.join(_COLUMNS)} FROM loomctx_proxy_sessions "
                               "WHERE tenant = %s AND id = %s", [tenant, session], held)
        return dict(zip(_COLUMNS, rows[0], strict=True)) if rows else None

    async def rows(self, tenant: str) -> list[dict[str, Any]]:
        rows = await self._run(f"SELECT {', '.join(_COLUMNS)} FROM loomctx_proxy_sessions "
                               "WHERE tenant = %s ORDER BY created, id", [tenant])
        return [dict(zip(_COLUMNS, r, strict=True)) for r in rows]

    async def insert(self, tenant: str, row: dict[str, Any]) -> bool:
        """Add a session's row; False when the tenant has a session of that id already."""
        names = [c for c in _COLUMNS if c in row]
        done = await self._run(
            f"INSERT INTO loomctx_proxy_sessions (tenant, {', '.join(names)}) VALUES "
            f"(%s, {', '.join(['%s'] * len(names))}) ON CONFLICT DO NOTHING RETURNING id",
            [tenant, *(_param(c, row[c]) for c in names)])
        return bool(done)

    async def chain(self, tenant: str, session: str, held: Held | None = None) -> list[str]:
        rows = await self._run("SELECT hash FROM loomctx_proxy_chain WHERE tenant = %s AND "
                               "session = %s ORDER BY n", [tenant, session], held)
        return [r[0] for r in rows]

    async def build_ids(self, tenant: str, session: str, held: Held | None = None) -> list[str]:
        rows = await self._run("SELECT id FROM loomctx_proxy_builds WHERE tenant = %s AND "
                               "session = %s ORDER BY at, id", [tenant, session], held)
        return [r[0] for r in rows]

    async def cut(self, tenant: str, session: str, n: int, head: str,
                  held: Held | None = None) -> None:
        """Keep the first ``n`` chain hashes (the messages the store holds), head ``head``."""
        try:
            async with self._connection(held) as conn, conn.transaction():
                await conn.execute("DELETE FROM loomctx_proxy_chain WHERE tenant = %s AND "
                                   "session = %s AND n >= %s", [tenant, session, n])
                await conn.execute("UPDATE loomctx_proxy_sessions SET head = %s, messages = %s "
                                   "WHERE tenant = %s AND id = %s", [head, n, tenant, session])
        except (psycopg.Error, PoolTimeout) as exc:
            raise ServiceError(503, f"the shared PostgreSQL store failed: {exc}") from exc

    async def will_store(self, tenant: str, row: dict[str, Any], start: int,
                         hashes: Sequence[str], held: Held | None = None) -> None:
        """Before messages are stored: their hashes from position ``start``, the session's
        row (created on its first messages) with its new head; one statement (so one
        transaction, and one round trip on the holder's lock line)."""
        names = [c for c in _COLUMNS if c in row]
        await self._run(
            f"WITH s AS (INSERT INTO loomctx_proxy_sessions (tenant, {', '.join(names)}) "
            f"VALUES (%s, {', '.join(['%s'] * len(names))}) ON CONFLICT (tenant, id) DO "
            "UPDATE SET head = EXCLUDED.head, messages = EXCLUDED.messages) "
            "INSERT INTO loomctx_proxy_chain (tenant, session, n, hash) "
            "SELECT %s, %s, u.n, u.hash FROM unnest(%s::integer[], %s::text[]) AS u(n, hash) "
            "ON CONFLICT (tenant, session, n) DO UPDATE SET hash = EXCLUDED.hash",
            [tenant, *(_param(c, row[c]) for c in names), tenant, row["id"],
             list(range(start, start + len(hashes))), list(hashes)], held)

    async def update(self, tenant: str, session: str, values: dict[str, Any],
                     held: Held | None = None) -> None:
        """Set some of a session's columns (what a lock holder changed)."""
        sets = ", ".join(f"{c} = %s" for c in values)
        await self._run(f"UPDATE loomctx_proxy_sessions SET {sets} WHERE tenant = %s AND "
                        "id = %s", [*(_param(c, v) for c, v in values.items()), tenant,
                                    session], held)

    async def settle(self, tenant: str, session: str, records: Sequence[BuildRecord],
                     values: dict[str, Any], held: Held | None = None) -> None:
        """What a lock holder leaves: what became known of its saved builds after the
        upstream answered (usage, whether the reply was stored, a note; their payloads are not
        written again) and the session's changed columns (:meth:`update`), in one
        statement."""
        sets = ", ".join(f"{c} = %s" for c in values)
        ids = [r.id for r in records]
        patches = [_outcome(r) for r in records]
        await self._run(
            "WITH b AS (UPDATE loomctx_proxy_builds AS b SET outcome = u.patch "
            "FROM unnest(%s::text[], %s::jsonb[]) AS u(id, patch) "
            "WHERE b.tenant = %s AND b.id = u.id) "
            f"UPDATE loomctx_proxy_sessions SET {sets} WHERE tenant = %s AND id = %s",
            [ids, patches, tenant, *(_param(c, v) for c, v in values.items()), tenant,
             session], held)

    async def find(self, tenant: str, fmt: str, hashes: Sequence[str],
                   ) -> tuple[str, int] | None:
        """The anonymous session (not ended, of ``fmt``) whose head is the latest of
        ``hashes``, and how many of them it holds."""
        if not hashes:
            return None
        rows = await self._run(
            "SELECT id, head FROM loomctx_proxy_sessions WHERE tenant = %s AND anonymous AND "
            "head = ANY(%s) AND format = %s AND state <> 'ended'", [tenant, list(hashes), fmt])
        at = {h: i for i, h in enumerate(hashes)}
        best: tuple[str, int] | None = None
        for sid, h in sorted(rows):
            if h in at and (best is None or at[h] + 1 > best[1]):
                best = (sid, at[h] + 1)
        return best

    async def find_retry(self, tenant: str, fmt: str, last: str) -> str | None:
        """The anonymous session (not ended, of ``fmt``) whose stored messages, less the last
        one, end with the chain hash ``last`` (a request ending there may be the retry of its
        last turn)."""
        rows = await self._run(
            "SELECT s.id FROM loomctx_proxy_chain c JOIN loomctx_proxy_sessions s ON "
            "s.tenant = c.tenant AND s.id = c.session WHERE c.tenant = %s AND c.hash = %s AND "
            "c.n = s.messages - 2 AND s.anonymous AND s.format = %s AND s.state <> 'ended' "
            "ORDER BY s.id LIMIT 1", [tenant, last, fmt])
        return str(rows[0][0]) if rows else None

    # -- builds -----------------------------------------------------------------------------
    async def save_builds(self, records: Sequence[BuildRecord],
                          held: Held | None = None) -> None:
        """Store (or update) build records; now and then trim each tenant to ``max_builds``."""
        if not records:
            return
        rows = [(r.tenant, r.id, r.session, r.at,
                 json.dumps({**r.to_dict(payload=True), "tenant": r.tenant}))
                for r in records]
        try:
            async with self._connection(held) as conn, conn.cursor() as cur:
                await cur.executemany(
                    "INSERT INTO loomctx_proxy_builds (tenant, id, session, at, record) "
                    "VALUES (%s, %s, %s, %s, %s::jsonb) ON CONFLICT (tenant, id) DO UPDATE "
                    "SET record = EXCLUDED.record, outcome = NULL", rows)
        except (psycopg.Error, PoolTimeout) as exc:
            raise ServiceError(503, f"the shared PostgreSQL store failed: {exc}") from exc
        self._saved += len(records)
        if self._saved >= TRIM_EVERY:
            self._saved = 0
            for tenant in {r.tenant for r in records}:
                await self._run(
                    "DELETE FROM loomctx_proxy_builds WHERE tenant = %s AND id NOT IN "
                    "(SELECT id FROM loomctx_proxy_builds WHERE tenant = %s "
                    "ORDER BY at DESC LIMIT %s)", [tenant, tenant, self.max_builds])

    async def build(self, tenant: str, build_id: str) -> BuildRecord | None:
        rows = await self._run(f"SELECT {_RECORD} FROM loomctx_proxy_builds WHERE tenant = %s AND "
                               "id = %s", [tenant, build_id])
        return record_from(rows[0][0]) if rows else None

    async def builds_of(self, tenant: str, session: str) -> list[BuildRecord]:
        rows = await self._run(f"SELECT {_RECORD} FROM loomctx_proxy_builds WHERE tenant = %s AND "
                               "session = %s ORDER BY at, id", [tenant, session])
        return [record_from(r[0]) for r in rows]

    # -- page sign-ins ended by POST /logout (:mod:`.signouts`) ------------------------------
    async def end_signin(self, signin: str, expires: float, *,
                         prune_before: float | None = None) -> None:
        """Record ``signin`` as ended until ``expires`` (and forget those that expired before
        ``prune_before``, when given)."""
        await self._run("INSERT INTO loomctx_proxy_signouts (signin, expires) VALUES (%s, %s) "
                        "ON CONFLICT (signin) DO NOTHING", [signin, expires])
        if prune_before is not None:
            await self._run("DELETE FROM loomctx_proxy_signouts WHERE expires < %s",
                            [prune_before])

    async def signin_ended(self, signin: str) -> bool:
        return bool(await self._run("SELECT 1 FROM loomctx_proxy_signouts WHERE signin = %s",
                                    [signin]))


def info_of(row: dict[str, Any]) -> dict[str, Any]:
    """A session's row as :meth:`Conversation.info` shows a session."""
    return {"id": row["id"], "state": row["state"], "format": row["format"],
            "model": row["model"], "messages": row["messages"], "builds": row["builds"],
            "created": row["created"]}


__all__ = ["LOCK_POLL", "POOL_CONNECTIONS", "TRIM_EVERY", "Conn", "SharedSessions",
           "info_of", "is_shared_url", "lock_key", "record_from"]
