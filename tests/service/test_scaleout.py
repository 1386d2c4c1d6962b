"""Two ``loomctx serve`` processes on one PostgreSQL + Redis serve one tenant's conversations.

Real processes on the project's dev servers (they fail the test, never skip it, when they
cannot start), each in front of a fake upstream of its own on loopback. Conversations resend
their whole history (recognised by content) and alternate between the processes; process A is
killed with SIGKILL while it holds requests at its upstream; the clients send those again to B.
Every message a client had an answer for is stored once, in order, and every conversation's
next request on B is sent upstream whole and in order.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from loomctx.servers import RedisServer, ServerError, free_port
from loomctx.stores.postgres import PostgresStore
from loomctx.stores.protocol import Scope
from loomctx.testing import FakeModelServer, Reply
from loomctx.testing.fake_server import RecordedRequest
from loomctx.testing.processes import wait_healthy

CONVERSATIONS = 4
TURNS = 6
BLOCK_AFTER = 6
"""Upstream requests process A's upstream answers before it holds every later one."""


def _echo(request: RecordedRequest) -> Reply:
    """The reply names the last user message, so each one is distinct."""
    last = [m for m in request.body["messages"] if m.get("role") == "user"][-1]
    return Reply(text=f"re: {last['content']}")


class _Holding:
    """An upstream answer that, past ``BLOCK_AFTER`` requests, holds every request until
    released (the proxy in front of it is killed meanwhile), and says when it first held."""

    def __init__(self) -> None:
        self.seen = 0
        self.lock = threading.Lock()
        self.holding = threading.Event()
        self.release = threading.Event()

    def __call__(self, request: RecordedRequest) -> Reply:
        with self.lock:
            self.seen += 1
            hold = self.seen > BLOCK_AFTER
        if hold:
            self.holding.set()
            self.release.wait(60)
        return _echo(request)


@contextmanager
def _proxies(upstreams: list[str], store: str, bus: str,
             ) -> Iterator[list[tuple[subprocess.Popen[bytes], str]]]:
    """``loomctx serve`` processes, one per upstream, started together; (process, base URL)."""
    started = []
    for upstream in upstreams:
        port = free_port()
        started.append((subprocess.Popen(
            [sys.executable, "-m", "loomctx.cli.main", "serve", "--upstream", upstream + "/v1",
             "--port", str(port), "--embedder", "hashing", "--store", store, "--bus", bus],
            env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE),
            f"http://127.0.0.1:{port}"))
    try:
        for proc, base in started:
            try:
                wait_healthy(base + "/health", proc, interval=0.1)
            except ServerError:
                proc.kill()
                err = proc.stderr.read().decode() if proc.stderr else ""
                pytest.fail(f"loomctx serve did not start: {err[-2000:]}")
        yield started
    finally:
        for proc, _ in started:
            if proc.poll() is None:
                proc.terminate()
        for proc, _ in started:
            proc.wait(timeout=20)
            if proc.stderr:
                proc.stderr.close()


class _Client:
    """One conversation: whole-history requests, alternating between the two processes."""

    def __init__(self, n: int, bases: list[str], killed: threading.Event) -> None:
        self.n, self.bases, self.killed = n, bases, killed
        self.acked: list[dict[str, str]] = []
        """The messages of the requests that were answered, with their replies."""
        self.failed_on_a = 0
        self.builds: list[tuple[str, str]] = []
        """(base URL, build id) of each answered request."""
        self.error: BaseException | None = None

    def turn(self, t: int) -> None:
        user = {"role": "user", "content": f"conversation {self.n} turn {t}"}
        body = {"model": "gpt-4o", "messages": [*self.acked, user]}
        base = self.bases[t % 2] if not self.killed.is_set() else self.bases[1]
        while True:
            try:
                resp = httpx.post(base + "/v1/chat/completions", json=body, timeout=60)
                break
            except httpx.TransportError:
                if base != self.bases[0]:
                    raise
                self.failed_on_a += 1
                self.killed.wait(30)
                base = self.bases[1]  # A is gone: the same request goes to B
        assert resp.status_code == 200, resp.text
        reply = resp.json()["choices"][0]["message"]
        self.acked += [user, {"role": "assistant", "content": reply["content"]}]
        self.builds.append((base, resp.headers["x-loomctx-build"]))

    def run(self) -> None:
        try:
            for t in range(TURNS):
                self.turn(t)
        except BaseException as exc:  # reported by the test's thread
            self.error = exc


def _events(http: httpx.Client, seen: list[dict[str, Any]], ready: threading.Event) -> None:
    """Collect the tenant's events from the stream of ``http``'s process until it is closed."""
    try:
        with http.stream("GET", "/v1/loomctx/events") as resp:
            for line in resp.iter_lines():
                ready.set()
                if line.startswith("data:"):
                    seen.append(json.loads(line[5:]))
    except httpx.HTTPError:
        pass  # closed by the test


def test_two_processes_share_conversations_and_survive_a_sigkill(
        pg_url: str, redis_server: RedisServer) -> None:
    holding = _Holding()
    with FakeModelServer(respond=holding) as up_a, FakeModelServer(respond=_echo) as up_b, \
            _proxies([up_a.url, up_b.url], pg_url, redis_server.url) as started, \
            httpx.Client(base_url=started[1][1], timeout=None) as stream:
        (proc_a, base_a), (_, base_b) = started
        events: list[dict[str, Any]] = []
        ready = threading.Event()
        listener = threading.Thread(target=_events, args=(stream, events, ready), daemon=True)
        listener.start()
        assert ready.wait(30)
        killed = threading.Event()
        clients = [_Client(n, [base_a, base_b], killed) for n in range(CONVERSATIONS)]
        threads = [threading.Thread(target=c.run) for c in clients]
        for th in threads:
            th.start()
        try:
            assert holding.holding.wait(60), "process A's upstream was never reached"
            time.sleep(0.5)  # A's other requests reach its upstream too, and are held there
            os.kill(proc_a.pid, signal.SIGKILL)
            proc_a.wait(timeout=10)
            killed.set()
        finally:
            holding.release.set()
            for th in threads:
                th.join(timeout=120)
        for c in clients:
            if c.error is not None:
                raise c.error
        assert sum(c.failed_on_a for c in clients) >= 1  # requests were in flight at A

        # Each conversation's next request, on the surviving process: sent upstream whole.
        for c in clients:
            c.turn(TURNS)
            sent = [{"role": m["role"], "content": m["content"]}
                    for m in up_b.requests[-1].body["messages"] if m["role"] != "system"]
            assert sent == c.acked[:-1], f"conversation {c.n}"

        # Every answered message is stored once, in its conversation's order, in one session.
        store = PostgresStore(pg_url)
        try:
            records = [r for r in store.scan(scope=Scope()) if r.level != "L3"]
        finally:
            store.close()
        contents = [r.content for r in records]
        sessions = []
        for c in clients:
            for m in c.acked:
                assert contents.count(m["content"]) == 1, m
            session = {r.session for r in records if r.content == c.acked[0]["content"]}
            assert len(session) == 1
            sessions += list(session)
            stored = sorted((r for r in records if r.session in session), key=lambda r: r.seq)
            assert [(r.role, r.content) for r in stored] == \
                [(m["role"], m["content"]) for m in c.acked]

        # Every build's page and record on either process, A's on B too.
        with httpx.Client(base_url=base_b, timeout=30) as http:
            for c in clients:
                for _, build in c.builds:
                    assert http.get(f"/builds/{build}").status_code == 200
                    assert http.get(f"/v1/loomctx/builds/{build}").json()["id"] == build
            listed = http.get("/v1/loomctx/sessions").json()["sessions"]
            assert sorted(s["messages"] for s in listed) == [2 * (TURNS + 1)] * CONVERSATIONS

        # B's event stream carried every answered request's model call, A's included.
        assert any(base == base_a for c in clients for base, _ in c.builds)

        def calls() -> list[int]:
            return [sum(1 for e in list(events) if e["kind"] == "model_called"
                        and e["data"]["session"] == s) for s in sessions]

        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and calls() != [TURNS + 1] * CONVERSATIONS:
            time.sleep(0.1)
        stream.close()
        assert calls() == [TURNS + 1] * CONVERSATIONS
