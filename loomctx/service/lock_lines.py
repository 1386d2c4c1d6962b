"""Session locks of one process, multiplexed over a few PostgreSQL connections.

A PostgreSQL advisory lock belongs to the connection that took it, and a session's lock is held
for its whole upstream call (10–60 s for a streamed reply). With one pooled connection per
held lock, a process served at most as many requests at once as it had connections (32), and
one tenant's slow requests could take them all. Here a process holds every session lock it
holds on one of a few *lines*: connections it opens for locks alone (``lock_lines``, 4 by
default), each holding any number of advisory locks. How many requests are in flight no longer
depends on connections; a request waiting for a session another process holds holds no
connection either (it tries again, backing off).

What a holder reads and writes for its session goes over the line its lock is on
(:meth:`LockLines.using`), so a line that broke — PostgreSQL restarted, the network was cut —
and with it the locks, fails the holder's writes (a 503) instead of letting them race the next
holder; the line reconnects for the next lock. A line runs one statement or transaction at a
time: they are short (no upstream call is ever made on a line), so holders take turns.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import psycopg

from loomctx.service.web import ServiceError

log = logging.getLogger("loomctx.service")

Conn = psycopg.AsyncConnection[Any]

LOCK_LINES = 4
"""Connections a process holds its session locks on (``serve --lock-lines``)."""
CONNECT_TIMEOUT = 10.0
"""Seconds a line may take to (re)connect before the request that needs it gets a 503."""


class Held:
    """A session lock this process holds: the line it is on and the connection that took it
    (the lock is gone if the line's connection is no longer that one)."""

    __slots__ = ("conn", "key", "line")

    def __init__(self, line: _Line, key: int, conn: Conn) -> None:
        self.line, self.key, self.conn = line, key, conn


class _Line:
    """One connection holding locks, used by one statement or transaction at a time."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.conn: Conn | None = None
        self.use = asyncio.Lock()
        self.keys: set[int] = set()
        """The locks this process holds on the line (PostgreSQL's are reentrant on one
        connection, so a second local holder is refused here)."""

    async def connection(self) -> Conn:
        """The line's connection (under ``use``); a new one when it broke (its locks died)."""
        if self.conn is not None and not self.conn.closed and not self.conn.broken:
            return self.conn
        self.keys.clear()
        self.conn = None
        try:
            conn = await asyncio.wait_for(
                psycopg.AsyncConnection.connect(self.url, autocommit=True), CONNECT_TIMEOUT)
        except (psycopg.Error, OSError, TimeoutError) as exc:
            raise ServiceError(503, f"cannot connect to the shared PostgreSQL store for "
                                    f"session locks: {type(exc).__name__}: {exc}") from exc
        self.conn = conn
        return conn

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()
            self.conn = None


class LockLines:
    """The session locks of a process on ``lines`` connections to ``url`` (see the module)."""

    def __init__(self, url: str, *, lines: int = LOCK_LINES) -> None:
        self._lines = [_Line(url) for _ in range(lines)]

    async def open(self) -> None:
        for line in self._lines:
            async with line.use:
                await line.connection()

    async def close(self) -> None:
        for line in self._lines:
            async with line.use:
                await line.close()

    def held_count(self) -> int:
        """Session locks this process holds now."""
        return sum(len(line.keys) for line in self._lines)

    async def try_lock(self, key: int) -> Held | None:
        """The lock ``key`` if it is free (here and in every other process), else None."""
        return (await self.try_lock_with(key, "SELECT pg_try_advisory_lock(%s)", [key]))[0]

    async def try_lock_with(self, key: int, sql: str, args: Sequence[Any],
                            ) -> tuple[Held | None, tuple[Any, ...]]:
        """:meth:`try_lock` by the statement ``sql``, which takes the lock ``key`` itself
        (its first column says whether it did) and may do more in the same round trip; the
        rest of its row."""
        line = self._lines[key % len(self._lines)]
        async with line.use:
            if key in line.keys:
                return None, ()
            for retry in (True, False):
                conn = await line.connection()
                try:
                    cur = await conn.execute(sql, args)
                    row = await cur.fetchone()
                    break
                except psycopg.Error as exc:
                    if retry and not line.keys:  # idle through a restart: no lock lost
                        await line.close()
                        continue
                    # The statement may have failed after it took the lock, which a failed
                    # statement does not give back: the line would keep it for no one.
                    with contextlib.suppress(psycopg.Error):
                        await conn.execute("SELECT pg_advisory_unlock(%s)", [key])
                    raise ServiceError(503, f"cannot lock a session in the shared PostgreSQL "
                                            f"store: {type(exc).__name__}: {exc}") from exc
            if row is None or not row[0]:
                return None, ()
            line.keys.add(key)
            return Held(line, key, conn), tuple(row[1:])

    async def unlock(self, held: Held) -> None:
        """Free a lock :meth:`try_lock` took (nothing to do if its line broke meanwhile: the
        server freed it with the connection)."""
        line = held.line
        async with line.use:
            if line.conn is not held.conn:
                return
            line.keys.discard(held.key)
            try:
                await held.conn.execute("SELECT pg_advisory_unlock(%s)", [held.key])
            except psycopg.Error as exc:  # closing the line frees every lock on it
                log.warning("unlocking a session failed (%s); closing its lock line", exc)
                await line.close()
                line.keys.clear()

    @asynccontextmanager
    async def using(self, held: Held) -> AsyncIterator[Conn]:
        """The connection holding ``held``, for the holder's statements (one at a time per
        line); a 503 when the lock was lost with its line."""
        line = held.line
        async with line.use:
            if line.conn is not held.conn or held.conn.closed or held.conn.broken:
                raise ServiceError(503, "the shared PostgreSQL store's connection holding "
                                        "this session's lock broke; send the request again")
            yield held.conn


__all__ = ["CONNECT_TIMEOUT", "LOCK_LINES", "Held", "LockLines"]
