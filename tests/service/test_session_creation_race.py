"""Concurrent first requests of one new named session (``X-Loomctx-Session``) all go through:
the session is created by whichever comes first and loaded by the others (create-or-load),
never refused as existing already (a 400 no SDK retries)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from loomctx.service import ServiceOptions, serve_in_thread
from loomctx.testing import FakeModelServer, HashingEmbedder, HttpError, Reply
from loomctx.testing.fake_server import RecordedRequest

CONCURRENT = 8


def _slow_echo(request: RecordedRequest) -> Reply:
    time.sleep(0.05)
    last = [m for m in request.body["messages"] if m.get("role") == "user"][-1]
    return Reply(text=f"re: {last['content']}")


def _first_requests(url: str, session: str) -> list[httpx.Response]:
    def send(i: int) -> httpx.Response:
        time.sleep(0.004 * i)  # staggered: some come while the first creates the session
        return httpx.post(url + "/v1/chat/completions", timeout=60,
                          headers={"x-loomctx-session": session},
                          json={"model": "gpt-4o",
                                "messages": [{"role": "user", "content": f"message {i}"}]})

    with ThreadPoolExecutor(CONCURRENT) as pool:
        return list(pool.map(send, range(CONCURRENT)))


def test_concurrent_first_requests_of_a_named_session_share_one_session(pg_url: str) -> None:
    """On a PostgreSQL store: every request is answered 200, one session exists and it holds
    every turn, each user message followed by its own reply."""
    with FakeModelServer(respond=_slow_echo) as up, serve_in_thread(ServiceOptions(
            upstream=up.url + "/v1", store=pg_url, embedder=HashingEmbedder())) as proxy:
        answers = _first_requests(proxy.url, "raced")
        assert [r.status_code for r in answers] == [200] * CONCURRENT, \
            [r.text for r in answers if r.status_code != 200]
        assert {r.headers["x-loomctx-session"] for r in answers} == {"raced"}
        sessions = httpx.get(proxy.url + "/v1/loomctx/sessions").json()["sessions"]
        assert [(s["id"], s["messages"]) for s in sessions] == [("raced", 2 * CONCURRENT)]
        service = proxy.app.state.service
        conv = service.tenants.session("default", "raced")
        assert conv is not None and service.tenants.loaded_bytes("default") == conv.size
        texts = [it.content for it in conv.session.memory.history.items]
    users = [t for t in texts if t.startswith("message")]
    assert sorted(users) == sorted(f"message {i}" for i in range(CONCURRENT))
    assert texts == [t for u in users for t in (u, f"re: {u}")]


def test_concurrent_first_requests_on_one_process_store_share_one_session() -> None:
    """The same on an in-memory store (one process): one session, every turn in it."""
    with FakeModelServer(respond=_slow_echo) as up, serve_in_thread(ServiceOptions(
            upstream=up.url + "/v1", embedder=HashingEmbedder())) as proxy:
        answers = _first_requests(proxy.url, "raced")
        assert [r.status_code for r in answers] == [200] * CONCURRENT
        sessions = httpx.get(proxy.url + "/v1/loomctx/sessions").json()["sessions"]
        assert [(s["id"], s["messages"]) for s in sessions] == [("raced", 2 * CONCURRENT)]


def test_the_others_go_on_when_the_first_request_of_a_new_session_fails(pg_url: str) -> None:
    """The request that created the session fails upstream while the others wait for it: the
    session is not forgotten under them; each of theirs is stored, in one session."""
    failed: list[str] = []

    def first_fails(request: RecordedRequest) -> Reply | HttpError:
        if not failed:
            failed.append("yes")
            time.sleep(0.3)
            return HttpError(500, "upstream bug")
        return _slow_echo(request)

    with FakeModelServer(respond=first_fails) as up, serve_in_thread(ServiceOptions(
            upstream=up.url + "/v1", store=pg_url, embedder=HashingEmbedder())) as proxy:
        answers = _first_requests(proxy.url, "raced")
        assert sorted(r.status_code for r in answers) == [200] * (CONCURRENT - 1) + [502]
        sessions = httpx.get(proxy.url + "/v1/loomctx/sessions").json()["sessions"]
        assert [(s["id"], s["messages"]) for s in sessions] == [("raced", 2 * CONCURRENT - 2)]
        conv = proxy.app.state.service.tenants.session("default", "raced")
        assert conv is not None and len(conv.chain) == 2 * CONCURRENT - 2
        assert not proxy.app.state.service._creating
