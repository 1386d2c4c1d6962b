"""The durability contract under faults (docs/service.md, "Durability"): every acknowledged turn
is stored exactly once and in order; what cannot be stored is not acknowledged.

A real ``loomctx serve`` process over the PostgreSQL and Redis the fixtures start, in front of a
fake upstream on loopback that streams each reply over about half a second. Eight clients stream
conversations at once (four resend the whole conversation, four send ``X-Loomctx-Session`` and
only the new message) and send a turn again until it is acknowledged (``data: [DONE]``), as an
application does with an error event, a 503 or a lost connection. Meanwhile PostgreSQL is
restarted twice and Redis once, each while streams are in flight. Then every acknowledged turn
must be in the store once, in its conversation's order, in one session per conversation, and
nothing else may be.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from loomctx.servers import PostgresServer, RedisServer, ServerError, free_port
from loomctx.stores.postgres import PostgresStore
from loomctx.stores.protocol import Scope
from loomctx.testing import FakeModelServer, Raw
from loomctx.testing.fake_server import RecordedRequest
from loomctx.testing.processes import wait_healthy

CLIENTS = 8
TURNS = 8
PIECES = 12
"""Chunks of each streamed reply, :data:`PAUSE` seconds apart."""
PAUSE = 0.04
DEADLINE = 120.0
"""Seconds the clients have for all their turns, faults included."""


def _chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    return "data: " + json.dumps({"id": "c", "object": "chat.completion.chunk", "choices": [
        {"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n"


def _slow_echo(request: RecordedRequest) -> Raw:
    """The reply names the last user message (so each is distinct), streamed slowly."""
    last = [m for m in request.body["messages"] if m.get("role") == "user"][-1]["content"]
    text = f"re: {last}"
    step = -(-len(text) // PIECES)
    pieces = [text[i:i + step] for i in range(0, len(text), step)]
    chunks = [_chunk({"role": "assistant", "content": ""}),
              *(_chunk({"content": p}) for p in pieces), _chunk({}, "stop"), "data: [DONE]\n\n"]
    return Raw(chunks=chunks, pause=PAUSE)


@contextmanager
def _serve(upstream: str, store: str, bus: str, log: Path) -> Iterator[str]:
    port = free_port()
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "loomctx.cli.main", "serve", "--upstream", upstream + "/v1",
             "--port", str(port), "--embedder", "hashing", "--store", store, "--bus", bus],
            env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=err)
    base = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_healthy(base + "/health", proc, interval=0.1)
        except ServerError:
            pytest.fail(f"loomctx serve did not start: {log.read_text()[-2000:]}")
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=20)


class _Client:
    """One conversation; each turn is sent again until it is acknowledged."""

    def __init__(self, n: int, base: str, flight: list[int], lock: threading.Lock) -> None:
        self.n, self.base = n, base
        self.named = n % 2 == 1
        self.acked: list[dict[str, str]] = []
        self.sessions: set[str] = set()
        self.failures: list[str] = []
        """Why attempts were not acknowledged (error events, statuses, lost connections)."""
        self.error: BaseException | None = None
        self._flight, self._lock = flight, lock

    def _attempt(self, http: httpx.Client, user: dict[str, str], tries: int) -> str | None:
        """The reply's text when the turn was acknowledged, else None (and why, noted).
        ``tries``: attempts made before, said as the SDKs say it."""
        body = {"model": "gpt-4o", "stream": True,
                "messages": [user] if self.named else [*self.acked, user]}
        headers = {"x-stainless-retry-count": str(tries)}
        if self.named:
            headers["x-loomctx-session"] = f"fault-{self.n}"
        with self._lock:
            self._flight[0] += 1
        try:
            with http.stream("POST", "/v1/chat/completions", json=body,
                             headers=headers) as resp:
                if resp.status_code != 200:
                    self.failures.append(f"HTTP {resp.status_code}: {resp.read()[:200]!r}")
                    delay = float(resp.headers.get("retry-after", "0.2"))
                    time.sleep(min(delay, 0.5))
                    return None
                text, done = [], False
                for line in resp.iter_lines():
                    if line == "data: [DONE]":
                        done = True
                    elif line.startswith("data: "):
                        data = json.loads(line[6:])
                        if "error" in data:
                            self.failures.append(f"error event: {data['error']}")
                            break
                        text += [c["delta"].get("content") or "" for c in data["choices"]]
                if not done:
                    time.sleep(0.2)
                    return None
                self.sessions.add(resp.headers["x-loomctx-session"])
                return "".join(text)
        except httpx.TransportError as exc:
            self.failures.append(f"{type(exc).__name__}: {exc}")
            time.sleep(0.2)
            return None
        finally:
            with self._lock:
                self._flight[0] -= 1

    def run(self) -> None:
        deadline = time.monotonic() + DEADLINE
        try:
            with httpx.Client(base_url=self.base, timeout=30) as http:
                for t in range(TURNS):
                    user = {"role": "user", "content": f"client {self.n} turn {t}"}
                    tries = 0
                    while (reply := self._attempt(http, user, tries)) is None:
                        assert time.monotonic() < deadline, self.failures[-5:]
                        tries += 1
                    assert reply == f"re: {user['content']}", reply
                    self.acked += [user, {"role": "assistant", "content": reply}]
        except BaseException as exc:  # reported by the test's thread
            self.error = exc


def _when_streaming(flight: list[int], acked: Callable[[], int], at_least: int) -> None:
    """Wait until ``at_least`` turns are acknowledged and streams are in flight."""
    deadline = time.monotonic() + DEADLINE
    while (acked() < at_least or flight[0] < 3) and time.monotonic() < deadline:
        time.sleep(0.01)


def test_acknowledged_turns_survive_two_postgresql_restarts_and_a_redis_restart(
        postgres_server: PostgresServer, pg_url: str, redis_server: RedisServer,
        tmp_path: Path) -> None:
    flight, lock = [0], threading.Lock()
    with FakeModelServer(respond=_slow_echo) as upstream, \
            _serve(upstream.url, pg_url, redis_server.url, tmp_path / "serve.log") as base:
        clients = [_Client(n, base, flight, lock) for n in range(CLIENTS)]
        threads = [threading.Thread(target=c.run) for c in clients]
        for th in threads:
            th.start()

        def acked() -> int:
            return sum(len(c.acked) // 2 for c in clients)

        try:
            for at_least, server in ((CLIENTS, postgres_server), (3 * CLIENTS, redis_server),
                                     (5 * CLIENTS, postgres_server)):
                _when_streaming(flight, acked, at_least)
                server.stop()
                time.sleep(0.5)  # streams end meanwhile: their turns cannot be stored
                server.start()
        finally:
            for th in threads:
                th.join(timeout=DEADLINE)
        for c in clients:
            if c.error is not None:
                raise AssertionError(f"client {c.n}: {c.error!r}; serve log: "
                                     f"{(tmp_path / 'serve.log').read_text()[-3000:]}")

    store = PostgresStore(pg_url)
    try:
        records = [r for r in store.scan(scope=Scope()) if r.level != "L3"]
    finally:
        store.close()
    contents = [r.content for r in records]
    lost = duplicated = 0
    for c in clients:
        assert len(c.sessions) == 1, (c.n, c.sessions)  # never forked into a new session
        for m in c.acked:
            lost += contents.count(m["content"]) == 0
            duplicated += contents.count(m["content"]) > 1
        stored = sorted((r for r in records if r.session in c.sessions), key=lambda r: r.seq)
        assert [(r.role, r.content) for r in stored] == \
            [(m["role"], m["content"]) for m in c.acked], f"client {c.n}"
    acknowledged = sum(len(c.acked) // 2 for c in clients)
    assert (acknowledged, lost, duplicated) == (CLIENTS * TURNS, 0, 0)
    assert len(records) == 2 * acknowledged  # nothing stored that was not acknowledged
    failures = [f for c in clients for f in c.failures]
    assert failures, "no request met a fault: the restarts came between streams"
    # An outage is a retryable 503 (or an error event), never a 500 or a 4xx.
    assert not [f for f in failures if f.startswith("HTTP") and
                not f.startswith(("HTTP 503", "HTTP 409"))], failures
    kinds = Counter(f.split(":")[0] for f in failures)
    print(f"\n{acknowledged} acknowledged turns, {len(records) // 2} stored, 0 lost, "
          f"0 duplicated; {len(failures)} attempts not acknowledged and sent again "
          f"({dict(kinds)})")
