"""The PostgreSQL store's connections: the pool, its settings, and the one place where driver
failures become :class:`~loomctx.errors.StoreError`.

Kept apart from :mod:`loomctx.stores.postgres` (the records and the searches). The store's own
pool hands out autocommit connections, each configured once with the vector search settings, so a
read is a single round trip; a write opens an explicit transaction. Connections are checked
before each use (:func:`check_connection`), so after a server restart the first operation
reconnects instead of failing.
"""

from __future__ import annotations

import select
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import psycopg
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolTimeout

from loomctx.errors import ConfigError, StoreError
from loomctx.stores._pg_vector import PROBES, search_settings

OUTAGE_WAIT = 0.25
"""Seconds an operation waits for a connection while the server is known to be down."""


def _where(url: str) -> str:
    """host:port/database of a URL, without credentials, for error messages."""
    parts = urlsplit(url)
    return f"{parts.hostname or 'localhost'}:{parts.port or 5432}{parts.path or '/'}"


def _quiet(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bool:
    """Whether an idle connection's socket has nothing to read: a server that closed it (a
    restart, a terminated backend) has sent its end or an error by then, so it reads."""
    if conn.closed or conn.broken:
        return False
    try:
        readable, _, _ = select.select([conn.pgconn.socket], [], [], 0)
    except (OSError, ValueError, psycopg.Error):
        return False
    return not readable


def check_connection(conn: psycopg.Connection[Any]) -> None:
    """A pooled connection's check before use: a round trip only when its socket says the
    server may have gone (:func:`_quiet`). Checking every connection with a query cost every
    store operation a round trip of its own."""
    if not _quiet(conn):
        ConnectionPool.check_connection(conn)


async def check_async_connection(conn: psycopg.AsyncConnection[Any]) -> None:
    """:func:`check_connection` for an asyncio pool."""
    if not _quiet(conn):
        await AsyncConnectionPool.check_connection(conn)


class PgConnections:
    """A store's access to PostgreSQL: its own pool (from a URL) or a caller's pool."""

    def __init__(self, url_or_pool: str | ConnectionPool, *, min_size: int, max_size: int,
                 timeout: float, connect_timeout: int, probes: int = PROBES) -> None:
        settings = search_settings(probes).encode()

        def configure(conn: psycopg.Connection) -> None:
            conn.execute(settings)

        if isinstance(url_or_pool, ConnectionPool):
            self.pool, self.own = url_or_pool, False
            info = url_or_pool.conninfo
            self.where = _where(info) if isinstance(info, str) else f"pool {url_or_pool.name!r}"
        elif isinstance(url_or_pool, str) and url_or_pool.startswith(
                ("postgresql://", "postgres://")):
            self.where = _where(url_or_pool)
            self.pool = ConnectionPool(
                url_or_pool, min_size=min_size, max_size=max_size, open=False, timeout=timeout,
                kwargs={"connect_timeout": connect_timeout, "autocommit": True},
                configure=configure, check=check_connection,
                name="loomctx-store",
            )
            self.own = True
        else:
            raise ConfigError(f"PostgresStore takes a postgresql:// URL or a ConnectionPool, "
                              f"got {url_or_pool!r}")
        self.closed = False
        self._down_since: float | None = None
        self._lock = threading.Lock()
        if self.own:
            try:
                self.pool.open(wait=True, timeout=timeout + connect_timeout)
            except PoolTimeout as exc:
                self.close()
                raise StoreError(f"cannot connect to PostgreSQL at {self.where} within "
                                 f"{timeout + connect_timeout:g} s ({exc}); check that the "
                                 "server is running and the URL is right") from exc

    @contextmanager
    def conn(self) -> Iterator[psycopg.Connection]:
        """A pooled connection; any driver or pool failure becomes a :class:`StoreError`."""
        if self.closed:
            raise StoreError(f"the PostgreSQL store {self.where} is closed; "
                             "open a new PostgresStore")
        # While the server is down, later operations wait briefly instead of the full timeout,
        # so a build during an outage degrades in about one timeout, not one per store call.
        full = self.pool.timeout
        wait = full if self._down_since is None else min(full, OUTAGE_WAIT)
        try:
            with self.pool.connection(timeout=wait) as conn:
                yield conn
            self._down_since = None
        except PoolTimeout as exc:
            self._down_since = self._down_since or time.monotonic()
            raise StoreError(
                f"PostgreSQL at {self.where} is unreachable (no connection within "
                f"{wait:g} s): {exc}; check that the server is running"
            ) from exc
        except psycopg.errors.TransactionRollback as exc:
            raise StoreError(f"PostgreSQL store {self.where}: the transaction conflicted with "
                             f"another one ({exc}); retry the operation") from exc
        except psycopg.OperationalError as exc:
            self._down_since = self._down_since or time.monotonic()
            raise StoreError(f"PostgreSQL at {self.where} failed: {exc}; the server may have "
                             "restarted or be down, retry the operation") from exc
        except psycopg.Error as exc:
            raise StoreError(f"PostgreSQL store {self.where} failed: {exc}") from exc

    @contextmanager
    def tx(self) -> Iterator[psycopg.Connection]:
        """One transaction: committed on success, rolled back on any error."""
        with self.conn() as conn, conn.transaction():
            yield conn

    def select(self, sql: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
        """One read: a single round trip on the store's own (autocommit) connections."""
        with self.conn() as conn:
            if conn.autocommit:
                return conn.execute(sql, args).fetchall()
            with conn.transaction():
                return conn.execute(sql, args).fetchall()

    def close(self) -> None:
        """Close the pool when the store opened it; later operations raise StoreError."""
        with self._lock:
            if not self.closed and self.own:
                self.pool.close()
            self.closed = True


__all__ = ["OUTAGE_WAIT", "PgConnections", "check_async_connection", "check_connection"]
