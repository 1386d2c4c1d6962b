"""Two services on one PostgreSQL store act as one: a session's turns are in order and a
client's retry is not stored twice, whichever service each request reaches.

Each service has its own connections, so PostgreSQL's locks and rows are all they share, as
two processes would (the SIGKILL test runs real processes: ``test_scaleout.py``).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator

import httpx
import psycopg
import pytest
import redis

from loomctx.bus import open_bus
from loomctx.servers import RedisServer
from loomctx.service import RunningServer, ServiceOptions, serve_in_thread
from loomctx.service.conversations import hashes
from loomctx.service.shared import SharedSessions, lock_key
from loomctx.stores.postgres import PostgresStore
from loomctx.stores.protocol import Scope
from loomctx.testing import FakeModelServer, HashingEmbedder, HttpError, Raw, Reply
from loomctx.testing.fake_server import RecordedRequest


def _echo(request: RecordedRequest) -> Reply:
    last = [m for m in request.body["messages"] if m.get("role") == "user"][-1]
    return Reply(text=f"re: {last['content']}")


def _slow_echo(request: RecordedRequest) -> Reply:
    time.sleep(0.5)  # the first request still holds the session when the second comes
    return _echo(request)


@pytest.fixture
def two(pg_url: str) -> Iterator[Callable[[FakeModelServer], RunningServer]]:
    """Starts services on the test's PostgreSQL database, each with its own pool."""
    running: list[RunningServer] = []

    def go(upstream: FakeModelServer) -> RunningServer:
        running.append(serve_in_thread(ServiceOptions(
            upstream=upstream.url + "/v1", store=pg_url, embedder=HashingEmbedder())))
        return running[-1]

    yield go
    for server in running:
        server.close()


def _stored(pg_url: str) -> list[tuple[str | None, str]]:
    store = PostgresStore(pg_url)
    try:
        records = sorted((r for r in store.scan(scope=Scope()) if r.level != "L3"),
                         key=lambda r: r.seq)
    finally:
        store.close()
    return [(r.role, r.content) for r in records]


def _post(server: RunningServer, session: str, text: str) -> httpx.Response:
    return httpx.post(server.url + "/v1/chat/completions", timeout=30,
                      headers={"x-loomctx-session": session},
                      json={"model": "gpt-4o", "messages": [{"role": "user", "content": text}]})


def test_a_retry_on_another_process_is_not_stored_twice(
        pg_url: str, two: Callable[[FakeModelServer], RunningServer]) -> None:
    """The openai SDK retries a 429 with the same session header; the retry reaching another
    process finds the message stored by the first and sends it upstream once."""
    with FakeModelServer([HttpError(429, retry_after=0)]) as up_a, \
            FakeModelServer(respond=_echo) as up_b:
        a, b = two(up_a), two(up_b)
        assert _post(a, "retried", "Where is parcel PX-1?").status_code == 429
        resp = _post(b, "retried", "Where is parcel PX-1?")
        assert resp.status_code == 200, resp.text
        # A has B's build, with what the upstream said (settled as the session is unlocked).
        url = a.url + f"/v1/loomctx/builds/{resp.headers['x-loomctx-build']}"
        deadline = time.monotonic() + 10
        while (record := httpx.get(url).json())["reply_stored"] is None \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        assert record["reply_stored"] is True and record["usage"]["completion_tokens"] == 10
    sent = [m["content"] for m in up_b.requests[-1].body["messages"] if m["role"] == "user"]
    assert sent == ["Where is parcel PX-1?"]
    assert _stored(pg_url) == [("user", "Where is parcel PX-1?"),
                               ("assistant", "re: Where is parcel PX-1?")]


def test_a_sessions_turns_stay_in_order_across_processes(
        pg_url: str, two: Callable[[FakeModelServer], RunningServer]) -> None:
    """Two turns of one session sent at once to two processes: one waits for the other's
    reply to be stored, then goes upstream with it."""
    with FakeModelServer(respond=_slow_echo) as up_a, \
            FakeModelServer(respond=_slow_echo) as up_b:
        a, b = two(up_a), two(up_b)
        results: dict[str, httpx.Response] = {}

        def send(server: RunningServer, text: str) -> None:
            results[text] = _post(server, "ordered", text)

        first = threading.Thread(target=send, args=(a, "first"))
        first.start()
        while not up_a.requests:  # the first holds the session, at its upstream
            time.sleep(0.01)
        send(b, "second")
        first.join()
    assert {k: r.status_code for k, r in results.items()} == {"first": 200, "second": 200}
    assert [m["content"] for m in up_b.requests[0].body["messages"]] == \
        ["first", "re: first", "second"]
    assert _stored(pg_url) == [("user", "first"), ("assistant", "re: first"),
                               ("user", "second"), ("assistant", "re: second")]


def test_a_session_made_on_one_process_is_read_on_another(
        pg_url: str, two: Callable[[FakeModelServer], RunningServer]) -> None:
    """The API's sessions, messages and builds: created on one, listed and built on the other;
    an id taken on one is refused on the other."""
    with FakeModelServer(respond=_echo) as up:
        a, b = two(up), two(up)
        made = httpx.post(a.url + "/v1/loomctx/sessions", json={"id": "shared-1"})
        assert made.status_code == 201, made.text
        again = httpx.post(b.url + "/v1/loomctx/sessions", json={"id": "shared-1"})
        assert again.status_code == 400 and "exists already" in again.text
        added = httpx.post(b.url + "/v1/loomctx/sessions/shared-1/messages",
                           json={"messages": [{"role": "user", "content": "hello there"}]})
        assert added.status_code == 200 and added.json()["messages"] == 1
        built = httpx.post(a.url + "/v1/loomctx/sessions/shared-1/build", json={})
        assert built.status_code == 200, built.text
        assert any(m.get("content") == "hello there" for m in built.json()["payload"]["messages"])
        listed = httpx.get(b.url + "/v1/loomctx/sessions").json()["sessions"]
        assert [(s["id"], s["messages"], s["builds"]) for s in listed] == [("shared-1", 1, 1)]
        page = httpx.get(b.url + f"/builds/{built.json()['id']}")
        assert page.status_code == 200 and "hello there" in page.text


async def _crash_before_storing(pg_url: str, session: str, message: dict[str, str]) -> None:
    """What a process killed between the two steps of storing ``message`` leaves: its hash
    written, the message not."""
    shared = SharedSessions(pg_url, max_builds=10)
    await shared.open()
    try:
        row = await shared.row("default", session)
        assert row is not None
        chain = await shared.chain("default", session)
        new = hashes(chain[-1], [message])
        await shared.will_store("default", {**row, "head": new[-1],
                                            "messages": len(chain) + 1}, len(chain), new)
    finally:
        await shared.close()


@pytest.mark.parametrize("header", [True, False])
def test_a_process_killed_between_hash_and_message_leaves_the_turn_to_be_sent_again(
        pg_url: str, two: Callable[[FakeModelServer], RunningServer], header: bool) -> None:
    """The next process cuts the chain back to the messages stored: the lost turn, sent
    again (with the session header, or resent whole), is stored once and sent upstream."""
    first = [{"role": "user", "content": "first"}]
    lost = {"role": "user", "content": "the lost turn"}
    with FakeModelServer(respond=_echo) as up:
        a, b = two(up), two(up)
        headers = {"x-loomctx-session": "cut"} if header else {}
        resp = httpx.post(a.url + "/v1/chat/completions", headers=headers, timeout=30,
                          json={"model": "gpt-4o", "messages": first})
        assert resp.status_code == 200, resp.text
        session = resp.headers["x-loomctx-session"]
        asyncio.run(_crash_before_storing(pg_url, session, lost))
        sent = [lost] if header else [*first, {"role": "assistant", "content": "re: first"},
                                      lost]
        resp = httpx.post(b.url + "/v1/chat/completions", headers=headers, timeout=30,
                          json={"model": "gpt-4o", "messages": sent})
        assert resp.status_code == 200, resp.text
        assert resp.headers["x-loomctx-session"] == session
    assert [m["content"] for m in up.requests[-1].body["messages"]] == \
        ["first", "re: first", "the lost turn"]
    assert _stored(pg_url) == [("user", "first"), ("assistant", "re: first"),
                               ("user", "the lost turn"), ("assistant", "re: the lost turn")]


def test_a_streamed_turn_is_the_next_process_s_history(
        pg_url: str, two: Callable[[FakeModelServer], RunningServer]) -> None:
    """A streamed reply is stored and the session unlocked after its last byte; the next
    turn, on another process, is sent upstream with it."""
    with FakeModelServer(respond=_echo) as up_a, FakeModelServer(respond=_echo) as up_b:
        a, b = two(up_a), two(up_b)
        streamed = httpx.post(a.url + "/v1/chat/completions", timeout=30,
                              headers={"x-loomctx-session": "streamed"},
                              json={"model": "gpt-4o", "stream": True,
                                    "messages": [{"role": "user", "content": "first"}]})
        assert streamed.status_code == 200 and "[DONE]" in streamed.text
        assert _post(b, "streamed", "second").status_code == 200
    assert [m["content"] for m in up_b.requests[0].body["messages"]] == \
        ["first", "re: first", "second"]
    assert _stored(pg_url) == [("user", "first"), ("assistant", "re: first"),
                               ("user", "second"), ("assistant", "re: second")]


def test_a_session_held_too_long_elsewhere_is_a_503_not_a_hang(pg_url: str) -> None:
    """A holder that never lets go (a process stopped, not dead) costs the waiter at most
    three upstream timeouts, then a 503 in the provider's shape; nothing is stored."""
    holder = psycopg.connect(pg_url, autocommit=True)
    try:
        holder.execute("SELECT pg_advisory_lock(%s)", [lock_key("default", "held")])
        with FakeModelServer(respond=_echo) as up, serve_in_thread(ServiceOptions(
                upstream=up.url + "/v1", store=pg_url, embedder=HashingEmbedder(),
                timeout=0.5)) as proxy:
            resp = _post(proxy, "held", "anyone there?")
            assert resp.status_code == 503, resp.text
            assert "busy in another process" in resp.json()["error"]["message"]
            assert not up.requests
    finally:
        holder.close()
    assert _stored(pg_url) == []


def test_each_process_reads_the_bus_as_its_own_group_and_removes_it_when_it_stops(
        redis_server: RedisServer) -> None:
    """Every process must see every event (a group hands each to one consumer only), so each
    has a group of its own while one of its event streams is open, none before (reading
    every event costs every process) or after; a process that stops leaves no group behind
    in Redis."""
    client = redis.Redis.from_url(redis_server.url)
    stream = open_bus(redis_server.url).stream

    def groups() -> set[str]:
        if not client.exists(stream):
            return set()
        return {g["name"].decode() for g in client.xinfo_groups(stream)
                if g["name"].decode().startswith("loomctx-service-sse")}

    def listen(http: httpx.Client, ready: threading.Event) -> None:
        try:
            with http.stream("GET", "/v1/loomctx/events") as resp:
                for _ in resp.iter_lines():
                    ready.set()
        except httpx.HTTPError:
            pass  # closed by the test

    before = groups()
    with FakeModelServer(respond=_echo) as up:
        # A bus per service: its connections belong to that service's event loop (and go
        # with it).
        servers = [serve_in_thread(ServiceOptions(upstream=up.url + "/v1",
                                                  events=open_bus(redis_server.url),
                                                  embedder=HashingEmbedder()))
                   for _ in range(2)]
        assert groups() == before  # no stream open: the bus is not read
        clients = [httpx.Client(base_url=server.url, timeout=60) for server in servers]
        readies = [threading.Event() for _ in servers]
        for http, ready in zip(clients, readies, strict=True):
            threading.Thread(target=listen, args=(http, ready), daemon=True).start()
        assert all(ready.wait(30) for ready in readies)
        assert len(groups() - before) == 2
        for http in clients:
            http.close()
        deadline = time.monotonic() + 30
        while groups() != before and time.monotonic() < deadline:
            for n, server in enumerate(servers):  # events to write: the servers see them gone
                assert _post(server, f"after-{n}", "hi").status_code == 200
            time.sleep(0.2)
        assert groups() == before  # the last stream of each closed
        for server in servers:
            server.close()
    assert groups() == before
    client.close()


def test_a_session_another_process_made_is_loaded_once_on_first_use(
        two: Callable[[FakeModelServer], RunningServer]) -> None:
    """Loaded while its lock is free, a session is current: taking the lock for the request
    does not load it again (a load reads all of the session's messages)."""
    with FakeModelServer(respond=_echo) as up:
        a, b = two(up), two(up)
        assert _post(a, "once", "first").status_code == 200
        service = b.app.state.service
        loads = []
        make = service._conversation

        def counted(*args: object) -> object:
            loads.append(args)
            return make(*args)

        service._conversation = counted
        assert _post(b, "once", "second").status_code == 200
        assert len(loads) == 1
        assert [m["content"] for m in up.requests[-1].body["messages"]] == \
            ["first", "re: first", "second"]


WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}


def test_tools_set_when_a_session_is_made_reach_every_process(
        pg_url: str, redis_server: RedisServer) -> None:
    """``POST /v1/loomctx/sessions`` with tools on one process: a build of the session on the
    other has them, and so does the first after the other changed the session (it reloads
    it from the shared store)."""
    with FakeModelServer(respond=_echo) as up:
        a, b = (serve_in_thread(ServiceOptions(
            upstream=up.url + "/v1", store=pg_url, embedder=HashingEmbedder(),
            events=open_bus(redis_server.url))) for _ in range(2))
        with a, b:
            made = httpx.post(a.url + "/v1/loomctx/sessions",
                              json={"id": "tooled", "tools": [WEATHER]})
            assert made.status_code == 201, made.text
            added = httpx.post(b.url + "/v1/loomctx/sessions/tooled/messages",
                               json={"messages": [{"role": "user", "content": "Oslo?"}]})
            assert added.status_code == 200, added.text
            for server in (b, a):
                built = httpx.post(server.url + "/v1/loomctx/sessions/tooled/build", json={})
                assert built.status_code == 200, built.text
                tools = built.json()["payload"].get("tools") or []
                assert [t["function"]["name"] for t in tools] == ["get_weather"]


async def _chain_and_row(pg_url: str, session: str) -> tuple[list[str], int, str]:
    shared = SharedSessions(pg_url, max_builds=10)
    await shared.open()
    try:
        row = await shared.row("default", session)
        assert row is not None
        return await shared.chain("default", session), row["messages"], row["head"]
    finally:
        await shared.close()


@pytest.mark.parametrize("stream", [False, True], ids=["upstream 500", "stream cut"])
def test_a_failed_turn_leaves_the_shared_session_as_it_was(
        pg_url: str, two: Callable[[FakeModelServer], RunningServer], stream: bool) -> None:
    """The upstream fails a turn on one process: the store's messages, the session's chain of
    hashes and its row are as before, and the retry on the other process is stored once."""
    cut = Raw(chunks=['data: {"choices": [{"index": 0, "delta": {"content": "par"}}]}\n\n'],
              cut=True)
    with FakeModelServer(["fine", cut if stream else HttpError(500, "upstream bug")]) as up_a, \
            FakeModelServer(respond=_echo) as up_b:
        a, b = two(up_a), two(up_b)
        assert _post(a, "failing", "first").status_code == 200
        before, shared = _stored(pg_url), asyncio.run(_chain_and_row(pg_url, "failing"))
        failed = httpx.post(a.url + "/v1/chat/completions", timeout=30,
                            headers={"x-loomctx-session": "failing"},
                            json={"model": "gpt-4o", "stream": stream,
                                  "messages": [{"role": "user", "content": "second"}]})
        assert (failed.status_code, '"error"' in failed.text) == ((200, True) if stream else
                                                                  (502, True))
        deadline = time.monotonic() + 10  # the stream's turn winds up after its last byte
        while asyncio.run(_chain_and_row(pg_url, "failing")) != shared and \
                time.monotonic() < deadline:
            time.sleep(0.05)
        assert _stored(pg_url) == before == [("user", "first"), ("assistant", "fine")]
        assert asyncio.run(_chain_and_row(pg_url, "failing")) == shared
        assert _post(b, "failing", "second").status_code == 200
    assert [m["content"] for m in up_b.requests[-1].body["messages"]] == \
        ["first", "fine", "second"]
    assert _stored(pg_url) == [("user", "first"), ("assistant", "fine"),
                               ("user", "second"), ("assistant", "re: second")]
