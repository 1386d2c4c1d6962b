"""A client that lost its connection after its turn was stored, and sends the request again (as
the SDKs do), gets the stored reply back: no second upstream call, no second copy of its
message, no new session (docs/service.md, "Durability").

The store is made slow at the moment of storing, and the client hangs up exactly then: the turn
is stored, the client never saw its reply. Real sockets, real HTTP, the fake upstream.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import numpy as np
import pytest

from loomctx import providers
from loomctx.providers.sse import Decoder
from loomctx.service import RunningServer, ServiceOptions, replay, serve_in_thread
from loomctx.service.replies import ReplyReader, read_body
from loomctx.stores.memory import InMemoryStore
from loomctx.stores.protocol import MemoryRecord, Scope
from loomctx.testing import FakeModelServer, HashingEmbedder, Reply
from loomctx.testing.fake_server import RecordedRequest

CHAT, MESSAGES = "/v1/chat/completions", "/v1/messages"


class SlowStore(InMemoryStore):
    """Its writes take a second while ``slow`` is set; ``storing`` is set when one starts."""

    def __init__(self) -> None:
        super().__init__()
        self.slow = False
        self.storing = threading.Event()

    def put(self, records: Sequence[MemoryRecord], vectors: np.ndarray | None = None) -> None:
        if self.slow:
            self.storing.set()
            time.sleep(1.0)
        super().put(records, vectors)

    def rows(self) -> list[tuple[str | None, str | None, str]]:
        records = sorted((r for r in self.scan(scope=Scope()) if r.level != "L3"),
                         key=lambda r: (r.session or "", r.seq))
        return [(r.session, r.role, r.content) for r in records]


def _echo(request: RecordedRequest) -> Reply:
    messages = request.body["messages"]
    last = messages[-1]["content"]
    text = last if isinstance(last, str) else last[-1]["text"]
    return Reply(text=f"re: {text}")


@pytest.fixture
def store() -> SlowStore:
    return SlowStore()


@pytest.fixture
def upstream() -> Iterator[FakeModelServer]:
    with FakeModelServer(respond=_echo) as server:
        yield server


@pytest.fixture
def proxy(upstream: FakeModelServer, store: SlowStore) -> Iterator[RunningServer]:
    with serve_in_thread(ServiceOptions(upstream=upstream.url + "/v1",
                                        store_factory=lambda: store,
                                        embedder=HashingEmbedder())) as server:
        yield server


def _body(path: str, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    body = {"model": "gpt-4o", "messages": messages, **extra}
    if path == MESSAGES:
        body["max_tokens"] = 100
    return body


def _lose_the_reply(proxy: RunningServer, store: SlowStore, path: str, body: dict[str, Any],
                    headers: dict[str, str]) -> None:
    """Send ``body`` and hang up while its turn is being stored (after the upstream answered,
    before the client has the reply's last event or its 200); wait until it is stored."""
    data = json.dumps(body).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    host, port = proxy.url.removeprefix("http://").split(":")
    before = len(store.rows())
    store.storing.clear()
    store.slow = True
    try:
        with socket.create_connection((host, int(port))) as raw:
            raw.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
                        f"{head}content-length: {len(data)}\r\n\r\n".encode() + data)
            assert store.storing.wait(30), "the turn was never stored"
        deadline = time.monotonic() + 30
        while len(store.rows()) == before and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        store.slow = False
    assert len(store.rows()) == before + 2  # the user's message and the reply nobody saw


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("path", [CHAT, MESSAGES])
def test_a_retry_with_the_session_header_gets_the_stored_reply(
        proxy: RunningServer, upstream: FakeModelServer, store: SlowStore, path: str,
        stream: bool) -> None:
    headers = {"x-loomctx-session": "s1"}
    with httpx.Client(base_url=proxy.url, timeout=30) as http:
        first = http.post(path, json=_body(path, [{"role": "user", "content": "hello"}]),
                          headers=headers)
        assert first.status_code == 200, first.text
        body = _body(path, [{"role": "user", "content": "where is PX-1?"}], stream=stream)
        _lose_the_reply(proxy, store, path, body, headers)
        calls = len(upstream.requests)
        again = http.post(path, json=body, headers={**headers, "x-stainless-retry-count": "1"})
        assert again.status_code == 200, again.text
        assert again.headers["x-loomctx-replayed"] == "true"
        assert again.headers["x-loomctx-session"] == "s1"
        assert "re: where is PX-1?" in again.text
        if stream:
            assert ("[DONE]" if path == CHAT else "message_stop") in again.text
        assert len(upstream.requests) == calls  # no second upstream call
        # The next turn goes upstream as usual, and sees one copy of the message.
        nxt = http.post(path, json=_body(path, [{"role": "user", "content": "thanks"}]),
                        headers=headers)
        assert nxt.status_code == 200 and "x-loomctx-replayed" not in nxt.headers
    contents = [c for _, _, c in store.rows()]
    assert contents == ["hello", "re: hello", "where is PX-1?", "re: where is PX-1?",
                        "thanks", "re: thanks"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_resent_whole_conversation_retry_gets_the_stored_reply_in_its_own_session(
        proxy: RunningServer, upstream: FakeModelServer, store: SlowStore,
        stream: bool) -> None:
    """Whole-conversation mode: the retry is the stored conversation less its last reply; it
    is answered from that session, not forked into a new one."""
    from openai import OpenAI

    history = [{"role": "user", "content": "hello"}]
    with httpx.Client(base_url=proxy.url, timeout=30) as http:
        first = http.post(CHAT, json=_body(CHAT, history))
        assert first.status_code == 200, first.text
        session = first.headers["x-loomctx-session"]
        history += [{"role": "assistant", "content": "re: hello"},
                    {"role": "user", "content": "where is PX-1?"}]
        body = _body(CHAT, history, stream=stream)
        _lose_the_reply(proxy, store, CHAT, body, {})
    calls = len(upstream.requests)
    # The SDK's own retry (x-stainless-retry-count: 1), read by the SDK.
    client = OpenAI(base_url=proxy.url + "/v1", api_key="unused", max_retries=0)
    retry = {"x-stainless-retry-count": "1"}
    if stream:
        chunks = list(client.chat.completions.create(
            model="gpt-4o", messages=history, stream=True,  # type: ignore[arg-type]
            extra_headers=retry))
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    else:
        raw = client.chat.completions.with_raw_response.create(
            model="gpt-4o", messages=history, extra_headers=retry)  # type: ignore[arg-type]
        assert raw.headers["x-loomctx-session"] == session
        assert raw.headers["x-loomctx-replayed"] == "true"
        text = raw.parse().choices[0].message.content or ""
    assert text == "re: where is PX-1?"
    assert len(upstream.requests) == calls
    # The conversation goes on in its one session.
    history += [{"role": "assistant", "content": text}, {"role": "user", "content": "thanks"}]
    nxt = httpx.post(proxy.url + CHAT, json=_body(CHAT, history), timeout=30)
    assert nxt.status_code == 200 and nxt.headers["x-loomctx-session"] == session
    assert store.rows() == [(session, "user", "hello"), (session, "assistant", "re: hello"),
                            (session, "user", "where is PX-1?"),
                            (session, "assistant", "re: where is PX-1?"),
                            (session, "user", "thanks"), (session, "assistant", "re: thanks")]


@pytest.mark.parametrize("said", [{}, {"x-stainless-retry-count": "0"}, "late"])
def test_the_same_message_again_as_a_new_turn_goes_upstream(
        proxy: RunningServer, upstream: FakeModelServer, store: SlowStore,
        monkeypatch: pytest.MonkeyPatch, said: dict[str, str] | str) -> None:
    """With the session header, the same message again is a new turn ("continue") unless the
    request says it is a retry, and past the replay window it is one whatever it says."""
    from loomctx.service import core

    headers = {"x-loomctx-session": "s2"}
    if said == "late":
        monkeypatch.setattr(core, "REPLAY_WINDOW", -1.0)
        headers["x-stainless-retry-count"] = "1"
    else:
        assert isinstance(said, dict)
        headers.update(said)
    body = _body(CHAT, [{"role": "user", "content": "continue"}])
    with httpx.Client(base_url=proxy.url, timeout=30) as http:
        assert http.post(CHAT, json=body, headers=headers).status_code == 200
        again = http.post(CHAT, json=body, headers=headers)
        assert again.status_code == 200 and "x-loomctx-replayed" not in again.headers
    assert len(upstream.requests) == 2
    assert [c for _, _, c in store.rows()] == ["continue", "re: continue"] * 2


def test_a_regenerate_is_not_a_retry(proxy: RunningServer, upstream: FakeModelServer) -> None:
    """An SDK's first attempt (x-stainless-retry-count: 0) resending the conversation less its
    last reply asks for another answer: it goes upstream."""
    history = [{"role": "user", "content": "hello"}]
    first = httpx.post(proxy.url + CHAT, json=_body(CHAT, history), timeout=30)
    assert first.status_code == 200
    again = httpx.post(proxy.url + CHAT, json=_body(CHAT, history), timeout=30,
                       headers={"x-stainless-retry-count": "0"})
    assert again.status_code == 200 and "x-loomctx-replayed" not in again.headers
    assert len(upstream.requests) == 2


def test_a_retry_reaching_another_process_gets_the_reply_the_first_one_stored(
        pg_url: str) -> None:
    """Over PostgreSQL the retry may reach any process: the one that did not serve the turn
    finds the session by the stored conversation less its reply, and sends that reply."""
    with FakeModelServer(respond=_echo) as up_a, FakeModelServer(respond=_echo) as up_b, \
            serve_in_thread(ServiceOptions(upstream=up_a.url + "/v1", store=pg_url,
                                           embedder=HashingEmbedder())) as a, \
            serve_in_thread(ServiceOptions(upstream=up_b.url + "/v1", store=pg_url,
                                           embedder=HashingEmbedder())) as b:
        history = [{"role": "user", "content": "hello"}]
        first = httpx.post(a.url + CHAT, json=_body(CHAT, history), timeout=30)
        session = first.headers["x-loomctx-session"]
        history += [{"role": "assistant", "content": "re: hello"},
                    {"role": "user", "content": "where is PX-1?"}]
        body = _body(CHAT, history, stream=True)
        assert "[DONE]" in httpx.post(a.url + CHAT, json=body, timeout=30).text
        # The client never saw that reply; its retry reaches process B.
        again = httpx.post(b.url + CHAT, json=body, timeout=30)
        assert again.headers["x-loomctx-session"] == session
        assert again.headers["x-loomctx-replayed"] == "true"
        assert "re: where is PX-1?" in again.text and "[DONE]" in again.text
        assert not up_b.requests
        named = {"x-loomctx-session": "named"}
        one = _body(CHAT, [{"role": "user", "content": "ping"}])
        assert httpx.post(a.url + CHAT, json=one, headers=named, timeout=30).status_code == 200
        again = httpx.post(b.url + CHAT, json=one, timeout=30,
                           headers={**named, "x-stainless-retry-count": "2"})
        assert again.headers["x-loomctx-replayed"] == "true" and not up_b.requests


@pytest.mark.parametrize("stream", [False, True])
def test_the_anthropic_sdk_reads_a_replayed_reply(
        proxy: RunningServer, upstream: FakeModelServer, store: SlowStore,
        stream: bool) -> None:
    from anthropic import Anthropic

    headers = {"x-loomctx-session": f"sdk-{stream}"}
    body = _body(MESSAGES, [{"role": "user", "content": "where is PX-1?"}], stream=stream)
    _lose_the_reply(proxy, store, MESSAGES, body, headers)
    calls = len(upstream.requests)
    client = Anthropic(base_url=proxy.url, api_key="unused", max_retries=0)
    retry = {**headers, "x-stainless-retry-count": "1"}
    messages: Any = body["messages"]
    if stream:
        with client.messages.stream(model="gpt-4o", max_tokens=100, messages=messages,
                                    extra_headers=retry) as events:
            reply = events.get_final_message()
    else:
        reply = client.messages.create(model="gpt-4o", max_tokens=100, messages=messages,
                                       extra_headers=retry)
    assert [b.text for b in reply.content if b.type == "text"] == ["re: where is PX-1?"]
    assert reply.stop_reason == "end_turn" and len(upstream.requests) == calls


CALL = {"role": "assistant", "content": "Looking it up.", "tool_calls": [
    {"id": "call_1", "type": "function",
     "function": {"name": "track", "arguments": '{"parcel": "PX-1"}'}}]}


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
@pytest.mark.parametrize("message", [{"role": "assistant", "content": "PX-1 is in Lyon."}, CALL])
def test_a_replayed_reply_reads_back_as_the_stored_message(
        fmt: str, message: dict[str, Any]) -> None:
    """What a replay sends, read by the proxy's own readers (those of the upstream's replies),
    is the message that was stored: text and tool calls with their ids."""
    whole, why = read_body(fmt, json.dumps(replay.body(fmt, message, "m")).encode())
    assert whole is not None, why
    reader = ReplyReader(fmt)
    events = replay.stream(fmt, message, "m", usage=True)
    for chunk in events:
        reader.feed(chunk)
    streamed = reader.result()
    assert streamed is not None, reader.error
    for got in (whole.message, streamed.message):
        assert {k: v for k, v in got.items() if v is not None} == message
    last = Decoder().feed(events[-1])
    assert len(last) == 1 and providers.get(fmt).is_last(last[0])
