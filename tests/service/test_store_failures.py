"""A store that fails is the service's trouble, not the client's: a retryable 503 in the
provider's outage shape with ``Retry-After``, never a 500 with a trace nor a 400 that blames
the request; and what could not be stored is never acknowledged.

The failing store is the in-memory one with a switch, so that each failure comes at a known
step (the PostgreSQL outages themselves: ``test_store_restarts.py``).
"""

from __future__ import annotations

import json
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
from loomctx.testing import FakeModelServer, HashingEmbedder, Raw, Reply
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


def _events(text: str) -> list[Any]:
    return [json.loads(line[5:]) for line in text.splitlines()
            if line.startswith("data:") and line[5:].strip() != "[DONE]"]


@pytest.mark.parametrize(("path", "last"), [(CHAT, "data: [DONE]"),
                                            (MESSAGES, "message_stop")])
def test_a_streamed_turn_whose_storing_fails_gets_an_error_event_not_its_last_event(
        proxy: RunningServer, switched: SwitchedStore, path: str, last: str) -> None:
    """docs/service.md: a streamed reply is stored before its last event. When the store fails
    at that moment the client gets the provider's error event instead of ``[DONE]`` /
    ``message_stop``, so the turn is not acknowledged; its retry is stored once."""
    with httpx.Client(base_url=proxy.url, timeout=30) as http:
        switched.writes_fail = True
        resp = http.post(path, json=_body(path, "hello", stream=True),
                         headers={"x-loomctx-session": "s"})
        assert resp.status_code == 200
        assert last not in resp.text, resp.text
        error = _events(resp.text)[-1]
        assert error["error"]["type"] in ("server_error", "overloaded_error"), resp.text
        assert "nothing of this turn was stored" in error["error"]["message"]
        switched.writes_fail = False
        resp = http.post(path, json=_body(path, "hello", stream=True),
                         headers={"x-loomctx-session": "s"})
        assert last in resp.text
    assert _rows(switched) == [("user", "hello"), ("assistant", "ok")]


def _chunk(delta: dict[str, Any]) -> bytes:
    return ("data: " + json.dumps({"choices": [{"index": 0, "delta": delta}]}) +
            "\n\n").encode()


def test_an_unreadable_chunk_in_a_stream_is_an_error_event_not_a_silent_done(
        tmp_path: Path) -> None:
    """One chunk the reader cannot read: the rest of the stream still passes, but the turn
    cannot be stored, so the client gets an error event in place of ``[DONE]``; the session
    holds nothing of the turn and the retry is stored once."""
    store = open_store(f"sqlite:///{tmp_path / 's.db'}")
    broken = Raw(chunks=[_chunk({"role": "assistant", "content": "PX-2 is"}),
                         b'data: {"choices": [{"delta": {"content": 5}}]}\n\n',
                         _chunk({"content": " here"}), b"data: [DONE]\n\n"])
    try:
        with FakeModelServer([broken, Reply(text="PX-2 is here")]) as up, \
                serve_in_thread(ServiceOptions(upstream=up.url + "/v1",
                                               store_factory=lambda: store,
                                               embedder=HashingEmbedder())) as proxy:
            body = _body(CHAT, "and parcel PX-2?", stream=True)
            headers = {"x-loomctx-session": "s"}
            resp = httpx.post(proxy.url + CHAT, json=body, headers=headers, timeout=30)
            assert "[DONE]" not in resp.text, resp.text
            assert "error" in _events(resp.text)[-1], resp.text
            assert _rows(store) == []
            resp = httpx.post(proxy.url + CHAT, json=body, headers=headers, timeout=30)
            assert "[DONE]" in resp.text
        assert _rows(store) == [("user", "and parcel PX-2?"),
                                ("assistant", "PX-2 is here")]
    finally:
        store.close()


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


def test_an_unloaded_conversation_is_loaded_again_not_copied_into_a_new_session(
        upstream: WindowedFakeServer, tmp_path: Path) -> None:
    """``--max-sessions 5``, seven conversations resent whole, then the first continues: on a
    store of one process its session is loaded again from the store (same id, its messages
    once), not a new session with the history copied; its id keeps answering."""
    with serve_in_thread(ServiceOptions(upstream=upstream.url + "/v1",
                                        store=str(tmp_path / "one.db"), max_sessions=5,
                                        embedder=HashingEmbedder())) as proxy, \
            httpx.Client(base_url=proxy.url, timeout=30) as http:
        first = [{"role": "user", "content": "chat 0: where is parcel PX-0?"}]
        ids = []
        for n in range(7):
            body = _body(CHAT, f"chat {n}: where is parcel PX-{n}?")
            resp = http.post(CHAT, json=body)
            assert resp.status_code == 200, resp.text
            ids.append(resp.headers["x-loomctx-session"])
        first += [{"role": "assistant", "content": "ok"},
                  {"role": "user", "content": "and when does it arrive?"}]
        resp = http.post(CHAT, json={"model": "gpt-4o", "messages": first})
        assert resp.status_code == 200, resp.text
        assert resp.headers["x-loomctx-session"] == ids[0]
        info = http.get(f"/v1/loomctx/sessions/{ids[0]}")
        assert info.status_code == 200 and info.json()["messages"] == 4, info.text
    store = open_store(f"sqlite:///{tmp_path / 'one.db'}")
    try:
        stored = [r for r in store.scan(scope=Scope()) if r.session == ids[0]]
        assert sorted((r.seq, r.content) for r in stored) == [
            (0, "chat 0: where is parcel PX-0?"), (1, "ok"), (2, "and when does it arrive?"),
            (3, "ok")]
        assert len({r.session for r in store.scan(scope=Scope())}) == 7
    finally:
        store.close()
