"""Each tenant's share of a process: one tenant's slow requests (an upstream that takes its
time, as real LLM streams do) cannot take what the others need.

- a tenant past its share of requests in flight gets 429 with ``Retry-After`` in its
  provider's error shape, while another tenant's request is served at once;
- on a PostgreSQL store, session locks take no connection each: more requests than the old
  pool of 32 hold their sessions' locks at the upstream at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import httpx
import psycopg

from loomctx.service import ServiceOptions, serve_in_thread
from loomctx.testing import FakeModelServer, HashingEmbedder, Reply
from loomctx.testing.fake_script import Step
from loomctx.testing.fake_server import RecordedRequest

KEYS = {"key-of-tenant-a": "a", "key-of-tenant-b": "b"}
A = {"authorization": "Bearer key-of-tenant-a"}
B = {"authorization": "Bearer key-of-tenant-b"}


class _GatedUpstream(FakeModelServer):
    """A fake upstream that keeps a request whose last message starts with "slow" until
    ``gate`` opens (outside the server's lock: the others are answered meanwhile)."""

    def __init__(self, gate: threading.Event) -> None:
        super().__init__(respond=_echo)
        self.gate = gate

    def _next(self, request: RecordedRequest) -> Step | str | None:
        step = super()._next(request)
        if _last(request).startswith("slow"):
            self.gate.wait(60)
        return step


def _last(request: RecordedRequest) -> str:
    return str([m for m in request.body["messages"] if m.get("role") == "user"][-1]["content"])


def _echo(request: RecordedRequest) -> Reply:
    return Reply(text=f"re: {_last(request)}")


def _post(url: str, headers: dict[str, str], text: str, session: str,
          path: str = "/v1/chat/completions") -> httpx.Response:
    return httpx.post(url + path, timeout=60, headers={**headers, "x-loomctx-session": session},
                      json={"model": "gpt-4o", "max_tokens": 50,
                            "messages": [{"role": "user", "content": text}]})


def _wait_for(count: Callable[[], int], n: int, what: str) -> None:
    deadline = time.monotonic() + 60
    while count() < n:
        assert time.monotonic() < deadline, f"{what}: {count()} of {n}"
        time.sleep(0.02)


def test_a_tenant_over_its_share_gets_429_while_another_is_served(pg_url: str) -> None:
    """Tenant A holds its whole share (2 requests stuck at the upstream): A's next request is
    refused with 429 and Retry-After, on both wire formats; B's is answered while A's are
    still stuck; once A's finish, A is served again."""
    gate = threading.Event()
    with _GatedUpstream(gate) as up, serve_in_thread(ServiceOptions(
            upstream=up.url + "/v1", store=pg_url, embedder=HashingEmbedder(), keys=KEYS,
            tenant_requests=2)) as proxy, ThreadPoolExecutor(2) as pool:
        stuck: list[Future[httpx.Response]] = [
            pool.submit(_post, proxy.url, A, f"slow {i}", f"a-{i}") for i in range(2)]
        try:
            _wait_for(lambda: len(up.requests), 2, "A's requests at the upstream")
            over = _post(proxy.url, A, "one more", "a-3")
            assert over.status_code == 429, over.text
            assert over.headers["retry-after"] == "1"
            assert over.json()["error"]["type"] == "rate_limit_error"
            assert "share" in over.json()["error"]["message"]
            anthropic = _post(proxy.url, {"x-api-key": "key-of-tenant-a",
                                          "anthropic-version": "2023-06-01"},
                              "one more", "a-4", path="/v1/messages")
            assert anthropic.status_code == 429 and anthropic.json()["type"] == "error"
            assert anthropic.json()["error"]["type"] == "rate_limit_error"
            served = _post(proxy.url, B, "hello", "b-1")
            assert served.status_code == 200, served.text
            assert not any(f.done() for f in stuck)  # B went through while A's were held
        finally:
            gate.set()
        assert [f.result().status_code for f in stuck] == [200, 200]
        assert _post(proxy.url, A, "again", "a-3").status_code == 200
        assert proxy.app.state.shares.in_flight("a") == (0, 0)
    assert not [r for r in up.requests if "one more" in str(r.body["messages"])]


def test_requests_in_flight_are_not_capped_by_lock_connections(pg_url: str) -> None:
    """40 requests of one tenant, each on its own session, all at the upstream at once (the
    old design held a pooled connection per session lock and stopped at 32, the rest
    waiting, then 503); every lock is held on the process's few lock lines."""
    gate, n = threading.Event(), 40
    with _GatedUpstream(gate) as up, serve_in_thread(ServiceOptions(
            upstream=up.url + "/v1", store=pg_url, embedder=HashingEmbedder())) as proxy, \
            ThreadPoolExecutor(n) as pool:
        futures = [pool.submit(_post, proxy.url, {}, f"slow {i}", f"s-{i}") for i in range(n)]
        try:
            _wait_for(lambda: len(up.requests), n, "requests at the upstream at once")
            shared = proxy.app.state.service.shared
            assert shared.locks.held_count() == n
        finally:
            gate.set()
        assert [f.result().status_code for f in futures] == [200] * n


def test_lock_lines_the_server_cut_while_idle_are_taken_again(pg_url: str) -> None:
    """Connections PostgreSQL ended while nothing was locked on them (a restart, an idle
    timeout) cost no request a 503: the lock line connects again."""
    with FakeModelServer(respond=_echo) as up, serve_in_thread(ServiceOptions(
            upstream=up.url + "/v1", store=pg_url, embedder=HashingEmbedder())) as proxy:
        assert _post(proxy.url, {}, "first", "cut").status_code == 200
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                          "datname = current_database() AND pid <> pg_backend_pid() AND "
                          "application_name NOT LIKE 'loomctx-store%'")
        answers = [_post(proxy.url, {}, f"after {i}", f"cut-{i}") for i in range(8)]
        assert [r.status_code for r in answers] == [200] * 8, [r.text for r in answers]
