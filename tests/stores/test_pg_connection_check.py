"""A pooled PostgreSQL connection is checked with a query only when its socket says the server
may have gone: a query per check cost every store operation a round trip of its own."""

from __future__ import annotations

import asyncio
import time

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from loomctx.stores import _pg_pool
from loomctx.stores._pg_pool import check_async_connection, check_connection


def _terminate(url: str, pid: int) -> None:
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [pid])
    time.sleep(0.2)  # the server's goodbye reaches the socket


def test_a_quiet_connection_is_not_queried_a_closed_one_is(
        pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    queried: list[object] = []
    real = ConnectionPool.check_connection
    monkeypatch.setattr(_pg_pool.ConnectionPool, "check_connection",
                        staticmethod(lambda conn: (queried.append(conn), real(conn))))
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("SELECT 1")
        check_connection(conn)
        assert queried == []
        _terminate(pg_url, conn.info.backend_pid)
        with pytest.raises(psycopg.OperationalError):
            check_connection(conn)
        assert queried == [conn]


def test_the_asyncio_check_alike(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    queried: list[object] = []
    real = AsyncConnectionPool.check_connection

    async def spy(conn: psycopg.AsyncConnection) -> None:
        queried.append(conn)
        await real(conn)

    monkeypatch.setattr(_pg_pool.AsyncConnectionPool, "check_connection", staticmethod(spy))

    async def scenario() -> None:
        async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
            await conn.execute("SELECT 1")
            await check_async_connection(conn)
            assert queried == []
            await asyncio.to_thread(_terminate, pg_url, conn.info.backend_pid)
            with pytest.raises(psycopg.OperationalError):
                await check_async_connection(conn)
            assert queried == [conn]

    asyncio.run(scenario())
