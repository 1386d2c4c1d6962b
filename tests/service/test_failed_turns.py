"""A turn whose upstream call fails is not stored: the session stays as it was before the
request (its stored rows, its memory, its conversation hashes), and the client's retry of the
same request is recognised and stored once.

Each failure mode the proxy meets is scripted on the fake upstream: a refused connection, a
hung upstream (504), an upstream error passed on (429) or turned into a 502 (500), an unreadable
reply (502), a client that hangs up while the upstream thinks, and a stream cut before its end.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from service_helpers import hang_up_during

from loomctx.service import RunningServer, ServiceOptions, serve_in_thread
from loomctx.stores.protocol import MemoryStore, Scope
from loomctx.stores.urls import open_store
from loomctx.testing import Delay, HashingEmbedder, HttpError, Raw, Reply
from loomctx.testing.fake_script import Step
from loomctx.testing.windowed import WindowedFakeServer

CHAT = "/v1/chat/completions"
FIRST = [{"role": "user", "content": "where is parcel PX-1?"}]
SECOND = {"role": "user", "content": "and parcel PX-2?"}


def _chunk(delta: dict[str, Any]) -> str:
    return "data: " + json.dumps({"choices": [{"index": 0, "delta": delta}]}) + "\n\n"


CUT_STREAM = Raw(chunks=[_chunk({"role": "assistant", "content": "PX-2 is"}),
                         'data: {"choices": [{"delta": {"content": "in'], cut=True)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    """A SQLite store the test reads beside the service."""
    opened = open_store(f"sqlite:///{tmp_path / 'turns.db'}")
    yield opened
    opened.close()


def _serve(upstream_url: str, store: MemoryStore, **options: Any) -> RunningServer:
    return serve_in_thread(ServiceOptions(upstream=upstream_url + "/v1", store_factory=lambda:
                                          store, embedder=HashingEmbedder(), **options))


def _rows(store: MemoryStore) -> list[tuple[str | None, str]]:
    records = sorted((r for r in store.scan(scope=Scope()) if r.level != "L3"),
                     key=lambda r: r.seq)
    return [(r.role, r.content) for r in records]


def _state(server: RunningServer, session: str) -> tuple[int, list[str], int, list[str]]:
    """What the service holds of ``session`` in memory: its history, its chain of hashes,
    its memory records and the tenant's index of conversation heads."""
    service = server.app.state.service
    conv = service.tenants.session("default", session)
    assert conv is not None
    memory = conv.session.memory
    heads = sorted(h for h, ids in service.tenants._heads["default"].items() if session in ids)
    return len(memory.history.items), list(conv.chain), len(memory.records), heads


def _send(server: RunningServer, messages: list[dict[str, Any]], *, header: bool,
          stream: bool = False) -> httpx.Response:
    body: dict[str, Any] = {"model": "gpt-4o", "max_tokens": 20, "messages": messages}
    if stream:
        body["stream"] = True
    return httpx.post(server.url + CHAT, json=body, timeout=30,
                      headers={"x-loomctx-session": "turns"} if header else {})


def _hang_up(server: RunningServer, upstream: WindowedFakeServer,
             messages: list[dict[str, Any]], header: bool) -> None:
    """Send a request and close the connection unread once the upstream has it."""
    hang_up_during(server, upstream, CHAT,
                   {"model": "gpt-4o", "max_tokens": 20, "messages": messages},
                   {"x-loomctx-session": "turns"} if header else {})


def _settled(server: RunningServer, session: str) -> None:
    """Wait until the session's lock is free (a cancelled request winds up after its client
    left)."""
    conv = server.app.state.service.tenants.session("default", session)
    deadline = time.monotonic() + 20
    while conv is not None and conv.lock.locked() and time.monotonic() < deadline:
        time.sleep(0.02)


TIMEOUT = 2.0
"""The upstream timeout of these servers: short for the "timeout" case, long enough that a
reply sent at once is not late on a busy machine, where the server, the fake upstream and the
test share one process and its interpreter lock."""

FAILURES: dict[str, tuple[Step, int | None, bool]] = {
    # name: (the upstream's answer, the client's status (None: hangs up), streamed)
    "timeout": (Delay(6.0, then=Reply(text="too late")), 504, False),
    "upstream 429": (HttpError(429, "slow down"), 429, False),
    "upstream 500": (HttpError(500, "upstream bug"), 502, False),
    "unreadable reply": (Raw(body='{"choices": [{"message": "hi"}]}'), 502, False),
    "client hangs up": (Delay(60.0, then=Reply(text="very late")), None, False),
    "stream cut": (CUT_STREAM, 200, True),
}


@pytest.mark.parametrize("header", [True, False], ids=["session header", "whole conversation"])
@pytest.mark.parametrize("failure", list(FAILURES))
def test_a_failed_turn_leaves_the_session_as_it_was_and_its_retry_is_stored_once(
        store: MemoryStore, failure: str, header: bool) -> None:
    step, status, stream = FAILURES[failure]
    with WindowedFakeServer(window=3000) as upstream, \
            _serve(upstream.url, store, timeout=TIMEOUT) as server:
        upstream.add(Reply(text="PX-1 is in Lyon"))
        ok = _send(server, FIRST, header=header)
        assert ok.status_code == 200, ok.text
        session = ok.headers["x-loomctx-session"]
        first_turn = [*FIRST, {"role": "assistant", "content": "PX-1 is in Lyon"}]
        rows, state = _rows(store), _state(server, session)
        assert rows == [("user", FIRST[0]["content"]), ("assistant", "PX-1 is in Lyon")]

        turn = [SECOND] if header else [*first_turn, SECOND]
        upstream.add(step)
        if status is None:
            _hang_up(server, upstream, turn, header)
            _settled(server, session)
        else:
            failed = _send(server, turn, header=header, stream=stream)
            assert failed.status_code == status, failed.text
            if stream:
                assert '"error"' in failed.text
        _settled(server, session)
        assert _rows(store) == rows
        assert _state(server, session) == state
        info = httpx.get(f"{server.url}/v1/loomctx/sessions/{session}").json()
        assert info["messages"] == 2

        upstream.add(Reply(text="PX-2 is in Oslo"))
        again = _send(server, turn, header=header)
        assert again.status_code == 200, again.text
        assert again.headers["x-loomctx-session"] == session
        sent = [(m["role"], m["content"]) for m in upstream.requests[-1].body["messages"]]
        assert sent == [("user", FIRST[0]["content"]), ("assistant", "PX-1 is in Lyon"),
                        ("user", SECOND["content"])]
    assert _rows(store) == [*rows, ("user", SECOND["content"]),
                            ("assistant", "PX-2 is in Oslo")]


def test_an_unreachable_upstream_leaves_the_session_as_it_was(store: MemoryStore) -> None:
    """Connection refused (a 502), then the upstream comes back on the same port: the retry
    is stored once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with _serve(url, store) as server:
        failed = _send(server, FIRST, header=True)
        assert failed.status_code == 502 and "could not be reached" in failed.text
        assert _rows(store) == []
        sessions = httpx.get(server.url + "/v1/loomctx/sessions").json()["sessions"]
        assert sessions == []  # the session the request would have created is not there
        with WindowedFakeServer(window=3000, port=port) as upstream:
            upstream.add(Reply(text="PX-1 is in Lyon"))
            again = _send(server, FIRST, header=True)
            assert again.status_code == 200, again.text
            assert [m["content"] for m in upstream.requests[-1].body["messages"]] == \
                [FIRST[0]["content"]]
    assert _rows(store) == [("user", FIRST[0]["content"]), ("assistant", "PX-1 is in Lyon")]


def test_a_failed_first_turn_leaves_no_session(
        upstream: WindowedFakeServer, start: Callable[..., RunningServer]) -> None:
    """A request that would start a session, failed by the upstream: no session is listed,
    and the retry starts one holding the turn once."""
    server = start(upstream)
    upstream.add(HttpError(503, "busy"), HttpError(503, "busy"), Reply(text="hello"))
    for header in (True, False):
        failed = _send(server, FIRST, header=header)
        assert failed.status_code == 503, failed.text
        assert httpx.get(server.url + "/v1/loomctx/sessions").json()["sessions"] == []
    ok = _send(server, FIRST, header=False)
    assert ok.status_code == 200
    listed = httpx.get(server.url + "/v1/loomctx/sessions").json()["sessions"]
    assert [s["messages"] for s in listed] == [2]
