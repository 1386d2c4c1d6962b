"""A session's lock and its version's increment are one round trip: the version moves only for
the holder that took the lock, and a row another holder inserted is seen."""

from __future__ import annotations

import asyncio

import pytest

from loomctx.service.shared import SharedSessions
from loomctx.service.web import ServiceError

ROW = {"id": "s1", "version": 1, "format": "openai", "anonymous": False, "seed": "x",
       "head": "x", "state": "active", "model": "gpt-4o", "system": "", "undercount": 1.0,
       "cap": None, "created": 0.0, "messages": 0, "builds": 0, "tools": []}


def test_only_the_holder_bumps_the_version(pg_url: str) -> None:
    async def scenario() -> None:
        a = SharedSessions(pg_url, max_builds=10)
        b = SharedSessions(pg_url, max_builds=10, lock_wait=0.2)
        await a.open()
        await b.open()
        try:
            held, version = await a.lock_and_bump("t", "s1")
            assert version is None  # no row yet
            assert await a.insert("t", ROW)  # inserted while held (its first messages)
            with pytest.raises(ServiceError) as refused:
                await b.lock_and_bump("t", "s1")
            assert refused.value.status == 503
            row = await a.row("t", "s1")
            assert row is not None and row["version"] == 1  # the waiter did not bump it
            await a.unlock(held)

            held, version = await b.lock_and_bump("t", "s1")
            assert version == 2
            await b.unlock(held)
            held, version = await a.lock_and_bump("t", "s1")
            assert version == 3
            await a.unlock(held)
            assert a.locks.held_count() == b.locks.held_count() == 0
        finally:
            await a.close()
            await b.close()

    asyncio.run(scenario())


def test_a_lock_statement_that_fails_after_taking_the_lock_gives_it_back(pg_url: str) -> None:
    """A failed statement keeps a session-level advisory lock it took: the line lets it go,
    else the session would stay locked for every process until the line reconnects."""
    from loomctx.service.lock_lines import LockLines

    async def scenario() -> None:
        mine, other = LockLines(pg_url, lines=1), LockLines(pg_url, lines=1)
        await mine.open()
        await other.open()
        try:
            kept = await mine.try_lock(7)  # the line holds a lock: no reconnect on failure
            assert kept is not None
            with pytest.raises(ServiceError):
                await mine.try_lock_with(
                    8, "WITH l AS MATERIALIZED (SELECT pg_try_advisory_lock(%s) AS ok) "
                       "SELECT ok, 1 / (random() * 0)::integer FROM l", [8])
            taken = await other.try_lock(8)
            assert taken is not None  # given back
            assert await other.try_lock(7) is None  # the line's other lock is still held
            await other.unlock(taken)
            await mine.unlock(kept)
        finally:
            await mine.close()
            await other.close()

    asyncio.run(scenario())
