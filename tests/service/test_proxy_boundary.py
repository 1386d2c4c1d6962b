"""The proxy's request boundary: what it refuses is refused before anything is stored or sent
upstream, in the provider's error shape; what the upstream gets wrong is a 502/504 or a stream
error event, never a 500, a cut connection or a stored half-reply."""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx
import numpy as np
import pytest
from service_helpers import hang_up_during

from loomctx.service import RunningServer
from loomctx.testing import Delay, HashingEmbedder, HttpError, Raw, Reply, ToolCall
from loomctx.testing.windowed import WindowedFakeServer

CHAT, MESSAGES = "/v1/chat/completions", "/v1/messages"
HI = {"model": "gpt-4o", "max_tokens": 20, "messages": [{"role": "user", "content": "hi"}]}


def _post(server: RunningServer, path: str, raw: bytes | str | dict[str, Any], *,
          headers: dict[str, str] | None = None, **kwargs: Any) -> httpx.Response:
    content = json.dumps(raw) if isinstance(raw, dict) else raw
    return httpx.post(server.url + path, content=content, timeout=kwargs.pop("timeout", 30),
                      headers={"content-type": "application/json", **(headers or {})},
                      **kwargs)


def _error(resp: httpx.Response, path: str = CHAT) -> str:
    """The message of an error in the route's provider shape (asserting the shape)."""
    body = resp.json()
    if path == MESSAGES:
        assert body["type"] == "error" and isinstance(body["error"]["type"], str), body
    else:
        assert set(body) == {"error"} and isinstance(body["error"]["type"], str), body
    message = body["error"]["message"]
    assert isinstance(message, str) and message and "Traceback" not in message
    return message


def _sessions(server: RunningServer) -> list[dict[str, Any]]:
    resp = httpx.get(server.url + "/v1/loomctx/sessions")
    assert resp.status_code == 200, resp.text
    sessions: list[dict[str, Any]] = resp.json()["sessions"]
    return sessions


def _nested(depth: int) -> Any:
    value: Any = "deep"
    for _ in range(depth):
        value = {"k": value}
    return value


def _refused_untouched(server: RunningServer, upstream: WindowedFakeServer,
                       calls: int) -> None:
    """A refused request left no session and made no upstream call."""
    assert len(upstream.requests) == calls
    assert _sessions(server) == []


# -- 3: deep nesting ---------------------------------------------------------------------------
def test_deeply_nested_tool_input_is_refused_and_does_not_poison_the_conversation(
        upstream: WindowedFakeServer, proxy: RunningServer) -> None:
    def conversation(tool_input: Any) -> dict[str, Any]:
        return {"model": "claude-fake-1", "max_tokens": 20, "messages": [
            {"role": "user", "content": "look it up"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": tool_input}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "found"}]}]}

    resp = _post(proxy, MESSAGES, conversation(_nested(950)))
    assert resp.status_code == 400 and "deeper than" in _error(resp, MESSAGES)
    _refused_untouched(proxy, upstream, 0)
    again = _post(proxy, MESSAGES, conversation({"order": "A-7"}))
    assert again.status_code == 200, again.text
    openai_deep = {**HI, "metadata": _nested(500)}
    resp = _post(proxy, CHAT, openai_deep)
    assert resp.status_code == 400 and "deeper than" in _error(resp)


# -- 4 and 17: session ids ---------------------------------------------------------------------
@pytest.mark.parametrize(("where", "ident"), [
    ("query", "a\x00b"), ("query", "a\nb"), ("query", "你好"), ("query", "a/b"),
    ("query", ".."), ("header", "."), ("header", "caf\u00e9"), ("header", "-x"),
    ("query", "x" * 129)])
def test_bad_session_ids_are_refused_before_anything_happens(
        upstream: WindowedFakeServer, proxy: RunningServer, where: str, ident: str) -> None:
    if where == "query":
        resp = httpx.post(proxy.url + CHAT, params={"loomctx_session": ident}, json=HI)
    else:
        resp = httpx.post(proxy.url + CHAT, headers={"x-loomctx-session": ident.encode()},
                          json=HI)
    assert resp.status_code == 400, resp.text
    assert "A-Z a-z 0-9 _ . : @ -" in _error(resp)
    _refused_untouched(proxy, upstream, 0)


def test_session_ids_follow_one_pattern_on_every_route(upstream: WindowedFakeServer,
                                                       proxy: RunningServer) -> None:
    for ident in ("a/b", "..", ".hidden"):
        resp = httpx.post(proxy.url + "/v1/loomctx/sessions", json={"id": ident})
        assert resp.status_code == 400 and "the pattern" in _error(resp)
    for ident in ("user.42", "team:a@b", "x_y-z"):
        resp = httpx.post(proxy.url + CHAT, headers={"x-loomctx-session": ident}, json=HI)
        assert resp.status_code == 200 and resp.headers["x-loomctx-session"] == ident
        info = httpx.get(f"{proxy.url}/v1/loomctx/sessions/{ident}")
        assert info.status_code == 200 and info.json()["messages"] == 2


# -- 5 and 6: upstream replies -----------------------------------------------------------------
@pytest.mark.parametrize(("path", "body"), [
    (CHAT, '{"choices": [{"message": "hi"}]}'), (CHAT, '{"choices": "none"}'),
    (CHAT, '{"choices": [{"message": {"content": ["x", 1]}}]}'),
    (CHAT, '{"choices": [{"message": {"content": "x", "tool_calls": [{"id": 3}]}}]}'),
    (CHAT, "not json at all"), (CHAT, "[" * 5000 + "]" * 5000),
    (MESSAGES, '{"content": "hi"}'), (MESSAGES, '{"content": [{"type": "text", "text": 5}]}'),
    (MESSAGES, '{"content": [{"type": "tool_use"}], "stop_reason": ["x"]}')])
def test_an_unreadable_upstream_reply_is_a_502_in_the_providers_shape(
        upstream: WindowedFakeServer, proxy: RunningServer, path: str, body: str) -> None:
    upstream.add(Raw(body=body))
    request = HI if path == CHAT else {**HI, "model": "claude-fake-1"}
    resp = _post(proxy, path, request)
    assert resp.status_code == 502, resp.text
    assert "cannot be read" in _error(resp, path)
    build = httpx.get(f"{proxy.url}/v1/loomctx/builds/{resp.headers.get('x-loomctx-build')}")
    assert build.status_code in (200, 404)  # a 502 raised by the proxy carries no header


@pytest.mark.parametrize("usage", [[1, 2], {"prompt_tokens": [1], "completion_tokens": "x",
                                            "prompt_tokens_details": [3]}, "lots"])
def test_an_odd_usage_is_no_usage(upstream: WindowedFakeServer, proxy: RunningServer,
                                  usage: Any) -> None:
    upstream.add(Raw(body=json.dumps({"choices": [{"message": {
        "role": "assistant", "content": "fine"}, "finish_reason": "stop"}], "usage": usage})))
    resp = _post(proxy, CHAT, HI)
    assert resp.status_code == 200 and resp.json()["choices"][0]["message"]["content"] == "fine"
    build = httpx.get(f"{proxy.url}/v1/loomctx/builds/{resp.headers['x-loomctx-build']}").json()
    assert build["reply_stored"] is True and build["usage"]["prompt_tokens"] == 0


def _chunk(delta: Any) -> str:
    return "data: " + json.dumps({"choices": [{"index": 0, "delta": delta}]}) + "\n\n"


@pytest.mark.parametrize("odd", ['data: {"choices": ["x"]}\n\n',
                                 'data: {"choices": [{"delta": "x"}]}\n\n',
                                 'data: {"choices": [{"delta": {"tool_calls": [5]}}]}\n\n',
                                 "data: [[[[\n\n", "data: 12\n\n"])
def test_an_odd_stream_chunk_does_not_cut_the_stream(
        upstream: WindowedFakeServer, proxy: RunningServer, odd: str) -> None:
    """The stream passes on as it came, but a reply that cannot be read cannot be stored: an
    error event takes the place of ``[DONE]`` (a turn the session does not hold is never
    acknowledged)."""
    chunks = [_chunk({"role": "assistant", "content": "he"}), odd, _chunk({"content": "llo"}),
              "data: [DONE]\n\n"]
    upstream.add(Raw(chunks=chunks))
    with httpx.stream("POST", proxy.url + CHAT, json={**HI, "stream": True}) as resp:
        got = b"".join(resp.iter_raw())
        build = resp.headers["x-loomctx-build"]
    passed = "".join(chunks[:-1]).encode()
    assert resp.status_code == 200 and got.startswith(passed) and b"[DONE]" not in got
    assert json.loads(got[len(passed):].decode().removeprefix("data: "))["error"]["type"]
    record = httpx.get(f"{proxy.url}/v1/loomctx/builds/{build}").json()
    assert record["reply_stored"] is False and record["note"]


@pytest.mark.parametrize(("status", "body"), [
    (400, "[" * 5000 + "]" * 5000), (400, "<html>bad gateway</html>"),
    (500, '{"content": "hi"}'), (503, '{"choices": [{"message": "hi"}]}'),
    (500, '{"error": "a string, not an object"}')])
def test_an_upstream_error_that_is_not_a_json_error_is_a_502(
        upstream: WindowedFakeServer, proxy: RunningServer, status: int, body: str) -> None:
    """Whatever the upstream's 5xx body, the client's 5xx is in the provider's error shape."""
    for path in (CHAT, MESSAGES):
        upstream.add(Raw(status=status, body=body))
        resp = _post(proxy, path, HI)
        assert resp.status_code == 502 and "not a JSON error" in _error(resp, path)


def test_an_upstream_4xx_object_passes_as_it_is(
        upstream: WindowedFakeServer, proxy: RunningServer) -> None:
    upstream.add(Raw(status=404, body='{"detail": "no such model"}'))
    resp = _post(proxy, CHAT, HI)
    assert resp.status_code == 404 and resp.json() == {"detail": "no such model"}


def test_upstream_errors_pass_through_and_a_500_becomes_a_502(
        upstream: WindowedFakeServer, proxy: RunningServer) -> None:
    nested = json.dumps({"error": {"message": "bad", "type": "x", "detail": _nested(60)}})
    upstream.add(Raw(status=400, body=nested), HttpError(500, "upstream bug"))
    resp = _post(proxy, CHAT, HI)
    assert resp.status_code == 400 and resp.content == nested.encode()
    resp = _post(proxy, CHAT, HI)
    assert resp.status_code == 502 and _error(resp) == "upstream bug"


# -- 7 and 13: strings and numbers the upstream could not take ---------------------------------
@pytest.mark.parametrize("raw", [
    '{"model": "gpt\\udfff", "messages": [{"role": "user", "content": "hi"}]}',
    '{"model": "gpt-4o", "messages": [{"role": "user", "content": "a\\ud800b"}]}',
    '{"model": "gpt-4o", "messages": [{"role": "user", "content": "hi", "\\udfff": 1}]}',
    '{"model": "gpt-4o", "temperature": NaN, "messages": [{"role": "user", "content": "hi"}]}',
    '{"model": "gpt-4o", "top_p": Infinity, "messages": [{"role": "user", "content": "hi"}]}',
    '{"model": "gpt-4o", "temperature": -Infinity, "messages": [{"role": "user", '
    '"content": "hi"}]}',
    '{"model": "gpt-4o", "temperature": 1e400, "messages": [{"role": "user", "content": "hi"}]}'])
def test_lone_surrogates_and_non_finite_numbers_are_refused(
        upstream: WindowedFakeServer, proxy: RunningServer, raw: str) -> None:
    resp = _post(proxy, CHAT, raw)
    assert resp.status_code == 400, resp.text
    assert any(w in _error(resp) for w in ("surrogate", "not a JSON value", "too large"))
    _refused_untouched(proxy, upstream, 0)


def test_the_api_refuses_lone_surrogates_and_the_listing_stays_readable(
        proxy: RunningServer) -> None:
    resp = _post(proxy, "/v1/loomctx/sessions", '{"id": "s1", "model": "gpt\\udfff"}')
    assert resp.status_code == 400
    _error(resp)
    assert _sessions(proxy) == []
    assert httpx.post(proxy.url + "/v1/loomctx/sessions", json={"id": "s1"}).status_code == 201
    for raw in ('{"messages": [{"role": "user", "content": "a\\udfffb"}]}',
                '{"messages": [{"role": "user", "content": "x", "name": {"\\ud800": 1}}]}'):
        resp = _post(proxy, "/v1/loomctx/sessions/s1/messages", raw)
        assert resp.status_code == 400, resp.text
    resp = _post(proxy, "/v1/loomctx/sessions", '{"id": "s2", "tools": [{"\\udfff": 1}]}')
    assert resp.status_code == 400, resp.text
    assert [s["messages"] for s in _sessions(proxy)] == [0]


# -- 8: timeouts and clients that leave ----------------------------------------------------------
def test_a_hung_upstream_is_a_504_and_frees_the_session(
        upstream: WindowedFakeServer, start: Callable[..., RunningServer]) -> None:
    server = start(upstream, timeout=0.5)
    upstream.add(Delay(3.0, then=Reply(text="late")), Reply(text="on time"))
    headers = {"x-loomctx-session": "hung"}
    resp = _post(server, CHAT, HI, headers=headers)
    assert resp.status_code == 504 and "upstream-timeout" in _error(resp)
    nxt = _post(server, CHAT, {**HI, "messages": [{"role": "user", "content": "again"}]},
                headers=headers)
    assert nxt.status_code == 200 and nxt.json()["choices"][0]["message"]["content"] == "on time"


def test_a_json_answer_that_trickles_in_is_bounded_as_a_whole(
        upstream: WindowedFakeServer, start: Callable[..., RunningServer]) -> None:
    """Each piece comes within the timeout, the whole answer does not: a 504."""
    server = start(upstream, timeout=0.6)
    body = json.dumps({"choices": [{"message": {"role": "assistant", "content": "slow"}}]})
    upstream.add(Raw(chunks=[body[i:i + 10] for i in range(0, len(body), 10)], pause=0.25,
                     headers={"content-type": "application/json"}))
    resp = _post(server, CHAT, HI)
    assert resp.status_code == 504 and "upstream-timeout" in _error(resp)


def test_a_stream_that_stalls_ends_with_an_error_event(
        upstream: WindowedFakeServer, start: Callable[..., RunningServer]) -> None:
    server = start(upstream, timeout=0.5)
    first = _chunk({"role": "assistant", "content": "he"})
    upstream.add(Raw(chunks=[first, _chunk({"content": "llo"}), "data: [DONE]\n\n"],
                     pause=2.0))
    with httpx.stream("POST", server.url + CHAT, json={**HI, "stream": True}) as resp:
        got = b"".join(resp.iter_raw()).decode()
    assert got.startswith(first)
    last = json.loads(got[len(first):].removeprefix("data: "))
    assert last["error"]["type"] == "timeout_error"


def test_a_client_that_hangs_up_cancels_the_upstream_call(
        upstream: WindowedFakeServer, proxy: RunningServer,
        caplog: pytest.LogCaptureFixture) -> None:
    """Without the cancel the session's lock would be held for the upstream's 60 s, and the
    next request of the session would time out waiting for it."""
    upstream.add(Delay(60.0, then=Reply(text="very late")), Reply(text="on time"))
    with caplog.at_level(logging.WARNING, logger="loomctx.service"):
        hang_up_during(proxy, upstream, CHAT, HI, {"x-loomctx-session": "left"})
        nxt = _post(proxy, CHAT, {**HI, "messages": [{"role": "user", "content": "back"}]},
                    headers={"x-loomctx-session": "left"}, timeout=20)
    assert nxt.status_code == 200 and nxt.json()["choices"][0]["message"]["content"] == "on time"
    gone = [r for r in caplog.records if "hung up" in r.getMessage()]
    assert len(gone) == 1 and gone[0].exc_info is None


def test_serve_has_an_upstream_timeout_option() -> None:
    from loomctx.cli.main import parser
    from loomctx.cli.serve import options_from
    from loomctx.errors import ConfigError
    from loomctx.service import ServiceOptions

    def parsed(*extra: str) -> Any:
        return options_from(parser("serve").parse_args(["serve", "--upstream", "http://h/v1",
                                                 "--embedder", "hashing", *extra]))

    assert parsed("--upstream-timeout", "7.5").timeout == 7.5
    assert parsed().timeout == ServiceOptions(upstream="http://h/v1").timeout == 300.0
    for bad in ("0", "-1", "nan", "inf"):
        with pytest.raises(ConfigError, match="upstream-timeout"):
            parsed("--upstream-timeout", bad)


def test_client_headers_with_odd_bytes_are_forwarded_as_they_came(
        upstream: WindowedFakeServer, proxy: RunningServer) -> None:
    resp = _post(proxy, MESSAGES, {**HI, "model": "claude-fake-1"},
                 headers={"anthropic-version": "\u00b8Y".encode("latin-1")})  # type: ignore[dict-item]
    assert resp.status_code == 200, resp.text
    assert upstream.requests[-1].headers["anthropic-version"] == "\u00b8Y"


# -- 10: retries -------------------------------------------------------------------------------
def test_a_retry_after_a_429_does_not_repeat_the_users_turn(
        upstream: WindowedFakeServer, proxy: RunningServer) -> None:
    upstream.add(HttpError(429, "slow down"), HttpError(503, "busy"), Reply(text="answer"))
    headers = {"x-loomctx-session": "retried"}
    statuses = [_post(proxy, CHAT, HI, headers=headers).status_code for _ in range(3)]
    assert statuses == [429, 503, 200]
    assert [m["content"] for m in upstream.requests[-1].body["messages"]] == ["hi"]
    # The user saying the same again after an answer is a new turn, not a retry.
    _post(proxy, CHAT, HI, headers=headers)
    assert [m["content"] for m in upstream.requests[-1].body["messages"]] == [
        "hi", "answer", "hi"]
    assert _sessions(proxy)[0]["messages"] == 4


# -- 11: refused requests store nothing ---------------------------------------------------------
@pytest.mark.parametrize("change", [
    {"max_tokens": 10**30}, {"max_tokens": 2999}, {"tools": [{"type": "function"}]},
    {"tools": "all"}, {"messages": [{"role": "user", "content": "x"}, {"role": "assistant"}]},
    {"messages": [{"role": "tool", "tool_call_id": "nobody", "content": "r"}]}])
def test_a_refused_request_leaves_no_session_and_no_message(
        upstream: WindowedFakeServer, start: Callable[..., RunningServer],
        change: dict[str, Any]) -> None:
    server = start(upstream, window=3000)
    for headers in ({}, {"x-loomctx-session": "named"}):
        resp = _post(server, CHAT, {**HI, **change}, headers=headers)
        assert resp.status_code == 400, resp.text
        _error(resp)
        _refused_untouched(server, upstream, 0)
    ok = _post(server, CHAT, {**HI, "messages": [{"role": "user", "content": "fresh"}]},
               headers={"x-loomctx-session": "named"})
    assert ok.status_code == 200
    assert [m["content"] for m in upstream.requests[-1].body["messages"]] == ["fresh"]


@pytest.mark.parametrize(("path", "budget", "change"), [
    (CHAT, "16", {}), (CHAT, "40", {"messages": [{"role": "user", "content": "word " * 100}]}),
    (MESSAGES, "30", {"model": "claude-fake-1", "system": "rule " * 100})])
def test_a_request_that_cannot_fit_its_budget_is_refused_before_it_is_stored(
        upstream: WindowedFakeServer, proxy: RunningServer, path: str, budget: str,
        change: dict[str, Any]) -> None:
    for session in ({}, {"x-loomctx-session": "tight"}):
        resp = _post(proxy, path, {**HI, **change}, headers={"x-loomctx-budget": budget,
                                                             **session})
        assert resp.status_code == 400 and "cannot fit its budget" in _error(resp, path)
        _refused_untouched(proxy, upstream, 0)
    ok = _post(proxy, path, {**HI, **change, "messages": HI["messages"], "system": "Be brief."},
               headers={"x-loomctx-budget": "200"})
    assert ok.status_code == 200, ok.text


# -- 12: one log line ---------------------------------------------------------------------------
def test_cut_uploads_and_cut_streams_log_one_line(
        upstream: WindowedFakeServer, proxy: RunningServer,
        caplog: pytest.LogCaptureFixture) -> None:
    first = _chunk({"role": "assistant", "content": "he"})
    upstream.add(Raw(chunks=[first, 'data: {"choices": [{"delta": {"content": "l'], cut=True))
    host, port = proxy.url.removeprefix("http://").split(":")
    with caplog.at_level(logging.INFO):
        with socket.create_connection((host, int(port))) as raw:
            raw.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                        b"content-type: application/json\r\ncontent-length: 5000\r\n\r\n"
                        b'{"model": "gpt-4o", "messages": [')
            time.sleep(0.3)
        with httpx.stream("POST", proxy.url + CHAT, json={**HI, "stream": True}) as resp:
            got = b"".join(resp.iter_raw()).decode()
        time.sleep(0.3)
    assert got.startswith(first)
    last = json.loads(got[len(first):].removeprefix("data: "))
    assert "broke off" in last["error"]["message"]
    assert not any(r.exc_info for r in caplog.records)
    assert "Traceback" not in caplog.text
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("loomctx")]
    assert any("hung up" in line for line in lines) and any("broke off" in line
                                                            for line in lines)
    assert _sessions(proxy) == []  # a cut turn is not kept, nor the session it would start


# -- 19: stored before the last byte -------------------------------------------------------------
class SlowEmbedder(HashingEmbedder):
    """Embeds a reply slowly, so a reply stored after the last byte is visibly not there yet."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if any("streamed answer" in t for t in texts):
            time.sleep(1.0)
        return super().embed(texts)


@pytest.mark.parametrize("path", [CHAT, MESSAGES])
def test_a_streamed_reply_is_stored_before_its_last_event(
        upstream: WindowedFakeServer, start: Callable[..., RunningServer], path: str) -> None:
    server = start(upstream, embedder=SlowEmbedder())
    upstream.add(Reply(text="the streamed answer", tool_calls=[ToolCall("f", {"a": 1})]))
    body = {**HI, "stream": True, "model": "claude-fake-1" if path == MESSAGES else "gpt-4o"}
    last = "data: [DONE]" if path == CHAT else "event: message_stop"
    seen: list[int] = []
    with httpx.stream("POST", server.url + path, json=body,
                      headers={"x-loomctx-session": "durable"}) as resp:
        for line in resp.iter_lines():
            if line == last:  # the client has its whole reply: the session must hold it
                info = httpx.get(server.url + "/v1/loomctx/sessions/durable").json()
                seen.append(info["messages"])
    assert seen == [2]


@pytest.mark.parametrize("messages", [
    [{"role": "system", "content": ""}], [{"role": "developer", "content": ""}],
    [{"role": "system"}, {"role": "system", "content": "  "}]])
def test_a_request_of_empty_system_messages_only_is_refused_untouched(
        upstream: WindowedFakeServer, proxy: RunningServer,
        messages: list[dict[str, Any]]) -> None:
    """Nothing to send (no prompt, no message): a 400 before anything is stored, never the
    build's structural failure as a 500."""
    resp = _post(proxy, CHAT, {"model": "gpt-4o", "messages": messages})
    assert resp.status_code == 400 and "nothing to send" in _error(resp)
    _refused_untouched(proxy, upstream, 0)
