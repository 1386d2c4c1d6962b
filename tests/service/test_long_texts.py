"""One huge text cannot take the service down: a request carrying a message over
``max_message_chars`` gets a 413 in its provider's shape before anything is stored or sent
upstream; an upstream reply over it gets a 502 and nothing of the turn is stored; a reply over
``max_body_bytes`` is not even read whole (JSON) or not kept (a stream, passed on as it comes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from loomctx.errors import ConfigError
from loomctx.service import RunningServer, ServiceOptions
from loomctx.stores.memory import InMemoryStore
from loomctx.stores.protocol import Scope
from loomctx.testing import Reply
from loomctx.testing.windowed import WindowedFakeServer

CHAT = "/v1/chat/completions"
MESSAGES = "/v1/messages"


def _openai(content: str, **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-4o", "max_tokens": 50,
            "messages": [{"role": "user", "content": content}], **extra}


def _stored(store: InMemoryStore) -> list[str]:
    records = sorted((r for r in store.scan(scope=Scope()) if r.level != "L3"),
                     key=lambda r: r.seq)
    return [r.content for r in records]


@pytest.fixture
def store() -> InMemoryStore:
    return InMemoryStore()


@pytest.fixture
def serve(start: Callable[..., RunningServer], upstream: WindowedFakeServer,
          store: InMemoryStore) -> Callable[..., RunningServer]:
    """Starts the service over ``store``, with options."""
    return lambda **options: start(upstream, store_factory=lambda: store, **options)


@pytest.fixture
def small(serve: Callable[..., RunningServer]) -> RunningServer:
    """The service with a limit of 2,000 characters per message."""
    return serve(max_message_chars=2_000)


def test_a_message_over_the_limit_gets_413_and_costs_no_upstream_call(
        upstream: WindowedFakeServer, small: RunningServer, store: InMemoryStore) -> None:
    resp = httpx.post(small.url + CHAT, json=_openai("word " * 401),
                      headers={"x-loomctx-session": "s1"}, timeout=30)
    assert resp.status_code == 413
    error = resp.json()["error"]
    assert error["type"] == "request_too_large"
    assert "2,005 characters" in error["message"] and "--max-message-chars" in error["message"]
    resp = httpx.post(small.url + MESSAGES, timeout=30, json={
        "model": "claude-sonnet-4-5", "max_tokens": 50,
        "messages": [{"role": "user", "content": "word " * 401}]})
    assert resp.status_code == 413
    assert resp.json()["type"] == "error"
    assert resp.json()["error"]["type"] == "request_too_large"
    assert upstream.requests == []
    assert _stored(store) == []
    ok = httpx.post(small.url + CHAT, json=_openai("word " * 300),
                    headers={"x-loomctx-session": "s1"}, timeout=30)
    assert ok.status_code == 200  # under the limit: served as ever


def test_a_reply_over_the_limit_gets_502_and_stores_nothing_of_the_turn(
        upstream: WindowedFakeServer, small: RunningServer, store: InMemoryStore) -> None:
    upstream.add(Reply(text="r" * 2_001))
    resp = httpx.post(small.url + CHAT, json=_openai("tell me everything"),
                      headers={"x-loomctx-session": "s2"}, timeout=30)
    assert resp.status_code == 502
    error = resp.json()["error"]
    assert error["type"] == "api_error"
    assert "2,001 characters" in error["message"] and "--max-message-chars" in error["message"]
    assert _stored(store) == []
    again = httpx.post(small.url + CHAT, json=_openai("tell me everything"),
                       headers={"x-loomctx-session": "s2"}, timeout=30)
    assert again.status_code == 200
    assert _stored(store) == ["tell me everything", "ok"]


def test_a_json_reply_over_the_body_limit_is_not_read_whole(
        upstream: WindowedFakeServer, serve: Callable[..., RunningServer],
        store: InMemoryStore) -> None:
    server = serve(max_body_bytes=20_000)
    upstream.add(Reply(text="s" * 50_000))
    resp = httpx.post(server.url + CHAT, json=_openai("a long one please"), timeout=30)
    assert resp.status_code == 502
    assert "20,000 bytes" in resp.json()["error"]["message"]
    assert _stored(store) == []


def test_a_stream_over_the_body_limit_is_passed_on_but_not_kept(
        upstream: WindowedFakeServer, serve: Callable[..., RunningServer],
        store: InMemoryStore) -> None:
    server = serve(max_body_bytes=20_000)
    upstream.add(Reply(text="t" * 50_000, chunk_chars=1_000))
    with httpx.stream("POST", server.url + CHAT, json=_openai("stream it", stream=True),
                      headers={"x-loomctx-session": "s4"}, timeout=30) as resp:
        assert resp.status_code == 200
        build = resp.headers["x-loomctx-build"]
        body = resp.read().decode()
    assert body.count("t" * 1_000) == 50  # the client got the reply as it came
    stored = _stored(store)
    assert not any("t" * 1_000 in text for text in stored)
    record = httpx.get(server.url + "/v1/loomctx/builds/" + build, timeout=30).json()
    assert record["reply_stored"] is False
    assert "20,000 characters" in record["note"]


def test_the_sessions_api_refuses_the_same_with_413(small: RunningServer,
                                                    store: InMemoryStore) -> None:
    url = small.url + "/v1/loomctx"
    assert httpx.post(url + "/sessions", json={"id": "api-1"}, timeout=30).status_code == 201
    resp = httpx.post(url + "/sessions/api-1/messages", timeout=30, json={"messages": [
        {"role": "user", "content": "fine"}, {"role": "assistant", "content": "z" * 2_001}]})
    assert resp.status_code == 413
    assert "max_message_chars" in resp.json()["error"]["message"]
    assert _stored(store) == []


def test_a_streamed_reply_over_the_limit_is_not_stored(
        upstream: WindowedFakeServer, small: RunningServer, store: InMemoryStore) -> None:
    upstream.add(Reply(text="u" * 3_000, chunk_chars=500))
    with httpx.stream("POST", small.url + CHAT, json=_openai("stream a lot", stream=True),
                      headers={"x-loomctx-session": "s6"}, timeout=30) as resp:
        assert resp.status_code == 200
        build = resp.headers["x-loomctx-build"]
        assert resp.read().decode().count("u" * 500) == 6
    assert _stored(store) == []
    record = httpx.get(small.url + "/v1/loomctx/builds/" + build, timeout=30).json()
    assert record["reply_stored"] is False
    assert "3,000 characters" in record["note"]


@pytest.mark.parametrize("bad", [0, -5, 2.5, True])
def test_the_limit_is_checked_at_start(bad: object) -> None:
    with pytest.raises(ConfigError, match="max_message_chars"):
        ServiceOptions(upstream="http://127.0.0.1:9/v1",
                       max_message_chars=bad)  # type: ignore[arg-type]
