"""A store that fails is the service's trouble, not the client's: a retryable 503 in the
provider's outage shape with ``Retry-After``, never a 500 with a trace nor a 400 that blames
the request; and what could not be stored is never acknowledged.

The failing store is the in-memory one with a switch, so that each failure comes at a known
step (the PostgreSQL outages themselves: ``test_store_restarts.py``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from loomctx.errors import StoreError
from loomctx.service import RunningServer, ServiceOptions, serve_in_thread
from loomctx.stores.memory import InMemoryStore
from loomctx.stores.protocol import Level, MemoryRecord, MemoryStore, Scope
from loomctx.stores.urls import open_store
from loomctx.testing import HashingEmbedder
from loomctx.testing.windowed import WindowedFakeServer

CHAT, MESSAGES = "/v1/chat/completions", "/v1/messages"


class SwitchedStore(InMemoryStore):
    """An in-memory store whose reads (``reads_fail``) or writes (``writes_fail``) raise
    :class:`StoreError`, as PostgreSQL's do while it restarts."""

    def __init__(self) -> None:
        super().__init__()
        self.reads_fail = False
        self.writes_fail = False

    def scan(self, *, scope: Scope, level: Level | None = None) -> Iterator[MemoryRecord]:
        if self.reads_fail:
            raise StoreError("PostgreSQL at 127.0.0.1:5432/db failed: the server is restarting")
        return super().scan(scope=scope, level=level)

    def put(self, records: Sequence[MemoryRecord], vectors: np.ndarray | None = None) -> None:
        if self.writes_fail:
            raise StoreError("PostgreSQL at 127.0.0.1:5432/db failed: the server is restarting")
        super().put(records, vectors)


@pytest.fixture
def switched() -> SwitchedStore:
    return SwitchedStore()


@pytest.fixture
def upstream() -> Iterator[WindowedFakeServer]:
    with WindowedFakeServer(window=3000, default="ok") as server:
        yield server


@pytest.fixture
def proxy(upstream: WindowedFakeServer, switched: SwitchedStore) -> Iterator[RunningServer]:
    """At most one loaded session per tenant: a second one unloads the first."""
    with serve_in_thread(ServiceOptions(upstream=upstream.url + "/v1",
                                        store_factory=lambda: switched, max_sessions=1,
                                        embedder=HashingEmbedder())) as server:
        yield server


def _body(path: str, text: str, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "gpt-4o", "messages": [{"role": "user", "content": text}],
                            **extra}
    if path == MESSAGES:
        body["max_tokens"] = 100
    return body


def _rows(store: MemoryStore) -> list[tuple[str | None, str]]:
    records = sorted((r for r in store.scan(scope=Scope()) if r.level != "L3"),
                     key=lambda r: (r.session or "", r.seq))
    return [(r.role, r.content) for r in records]


@pytest.mark.parametrize(("path", "kind"), [(CHAT, "server_error"),
                                            (MESSAGES, "overloaded_error")])
def test_a_store_failing_while_a_session_loads_is_a_retryable_503(
        proxy: RunningServer, upstream: WindowedFakeServer, switched: SwitchedStore,
        path: str, kind: str) -> None:
    """Session ``a`` was unloaded (a second session came); while the store is down, loading it
    again fails: a 503 the SDKs retry, in the route's shape, before the upstream is called."""
    with httpx.Client(base_url=proxy.url, timeout=30) as http:
        for sid in ("a", "b"):
            assert http.post(path, json=_body(path, f"hello {sid}"),
                             headers={"x-loomctx-session": sid}).status_code == 200
        calls = len(upstream.requests)
        switched.reads_fail = True
        resp = http.post(path, json=_body(path, "still there?"),
                         headers={"x-loomctx-session": "a"})
        assert resp.status_code == 503, resp.text
        assert resp.headers["retry-after"].isdigit()
        error = resp.json()["error"]
        assert error["type"] == kind and "send it again" in error["message"]
        assert "Traceback" not in resp.text and len(upstream.requests) == calls
        switched.reads_fail = False  # the store is back: the SDK's retry goes through
        resp = http.post(path, json=_body(path, "still there?"),
                         headers={"x-loomctx-session": "a"})
        assert resp.status_code == 200, resp.text
    assert _rows(switched) == [("user", "hello a"), ("assistant", "ok"),
                               ("user", "still there?"), ("assistant", "ok"),
                               ("user", "hello b"), ("assistant", "ok")]


def test_a_json_turn_whose_storing_fails_is_a_503_and_its_retry_is_stored_once(
        proxy: RunningServer, upstream: WindowedFakeServer, switched: SwitchedStore) -> None:
    """The upstream answered but the turn could not be stored: not a 200 (nobody may count on
    a turn the session does not hold), and the retry stores the turn once."""
    with httpx.Client(base_url=proxy.url, timeout=30) as http:
        switched.writes_fail = True
        resp = http.post(CHAT, json=_body(CHAT, "hello"), headers={"x-loomctx-session": "s"})
        assert resp.status_code == 503, resp.text
        assert resp.json()["error"]["type"] == "server_error"
        switched.writes_fail = False
        resp = http.post(CHAT, json=_body(CHAT, "hello"), headers={"x-loomctx-session": "s"})
        assert resp.status_code == 200, resp.text
    assert _rows(switched) == [("user", "hello"), ("assistant", "ok")]


def test_a_long_first_message_on_a_fresh_sqlite_store_is_answered_and_stored(
        tmp_path: Path) -> None:
    """A 64 KB first message: its build searches the empty store (loading a vector index
    without a width yet), then the turn is stored into that index."""
    long = " ".join(f"line {i}: GET /api/items/{i} 200 {i * 7 % 997}ms" for i in range(2000))
    assert len(long) > 64_000
    with WindowedFakeServer(window=128_000, default="seen") as up, \
            serve_in_thread(ServiceOptions(upstream=up.url + "/v1",
                                           store=str(tmp_path / "fresh.db"),
                                           embedder=HashingEmbedder())) as proxy:
        resp = httpx.post(proxy.url + CHAT, json=_body(CHAT, long), timeout=60)
        assert resp.status_code == 200, resp.text
    store = open_store(f"sqlite:///{tmp_path / 'fresh.db'}")
    try:
        assert _rows(store) == [("user", long), ("assistant", "seen")]
    finally:
        store.close()


class _BuggyStore(InMemoryStore):
    """A store with a bug: its writes raise a plain ``ValueError``."""

    def put(self, records: Sequence[MemoryRecord], vectors: np.ndarray | None = None) -> None:
        raise ValueError("could not broadcast input array from shape (0,0) into shape (0,256)")


@pytest.mark.parametrize("path", [CHAT, MESSAGES])
def test_an_internal_value_error_is_a_500_not_a_400_that_blames_the_client(
        upstream: WindowedFakeServer, path: str) -> None:
    with serve_in_thread(ServiceOptions(upstream=upstream.url + "/v1",
                                        store_factory=_BuggyStore,
                                        embedder=HashingEmbedder())) as proxy:
        resp = httpx.post(proxy.url + path, json=_body(path, "hello"), timeout=30)
    assert resp.status_code == 500, resp.text
    assert "internal error" in resp.json()["error"]["message"]
    assert "broadcast" not in resp.text  # the details go to the log, not to the client
