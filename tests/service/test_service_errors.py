"""Bad input gets a 4xx whose body is one JSON line with the reason, never a 500 or a trace,
on every route; limits on body size and message count hold."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loomctx.service import RunningServer
from loomctx.testing.windowed import WindowedFakeServer

POSTS = ["/v1/chat/completions", "/v1/messages", "/v1/loomctx/sessions",
         "/v1/loomctx/sessions/s1/messages", "/v1/loomctx/sessions/s1/build",
         "/v1/loomctx/sessions/s1/end", "/v1/loomctx/sessions/s1/notes",
         "/v1/loomctx/sessions/s1/notes/expand"]


@pytest.fixture(scope="module")
def fuzz_server() -> Iterator[RunningServer]:
    from loomctx.service import ServiceOptions, serve_in_thread
    from loomctx.testing import HashingEmbedder

    with WindowedFakeServer(window=3000, default="ok") as upstream:
        server = serve_in_thread(ServiceOptions(
            upstream=upstream.url + "/v1", embedder=HashingEmbedder(), max_body_bytes=20_000,
            max_messages=50))
        httpx.post(server.url + "/v1/loomctx/sessions", json={"id": "s1"})
        try:
            yield server
        finally:
            server.close()


def _one_line_reason(resp: httpx.Response) -> str:
    assert resp.headers["content-type"].startswith("application/json")
    assert resp.text.count("\n") == 0
    body = resp.json()
    err = body["error"]
    message = err["message"] if isinstance(err, dict) else err
    assert isinstance(message, str) and message and "Traceback" not in message
    return message


@pytest.mark.parametrize("path", POSTS)
@pytest.mark.parametrize(("raw", "reason"), [
    (b"{not json", "not valid JSON"), (b"[1, 2]", ""), (b'"text"', ""), (b"", ""),
    (b'{"messages": "hi"}', ""), (b'{"messages": [42]}', ""), (b"9" * 5000, ""),
    (b"[" * 3000 + b"]" * 3000, "")])
def test_malformed_bodies_get_one_line_4xx(fuzz_server: RunningServer, path: str, raw: bytes,
                                           reason: str) -> None:
    resp = httpx.post(fuzz_server.url + path, content=raw,
                      headers={"content-type": "application/json"})
    if path.endswith("/end") and resp.status_code == 200:
        return  # ending takes no body; a second end is a no-op
    assert 400 <= resp.status_code < 500, resp.text
    assert reason in _one_line_reason(resp)


scalars = (st.none() | st.booleans() | st.integers() | st.text(max_size=20)
           | st.floats(allow_nan=False, allow_infinity=False))
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner,
                                                                max_size=4), max_leaves=20)
messages = st.lists(st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool", "system", "bot"])},
    optional={"content": json_values, "tool_calls": json_values, "tool_call_id": json_values,
              "name": json_values}), max_size=4)
bodies = st.fixed_dictionaries({}, optional={
    "model": st.sampled_from(["gpt-4o", "claude-fake-1", "", "x" * 300]) | json_values,
    "messages": messages | json_values, "max_tokens": st.integers(-5, 10**7) | json_values,
    "stream": st.booleans(), "tools": json_values, "system": json_values,
    "id": json_values, "query": json_values, "type": json_values, "content": json_values,
    "text": json_values})


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(path=st.sampled_from(POSTS), body=bodies)
def test_fuzzed_bodies_never_get_a_500(fuzz_server: RunningServer, path: str,
                                       body: dict[str, object]) -> None:
    resp = httpx.post(fuzz_server.url + path, json=body, timeout=30)
    assert resp.status_code < 500, resp.text
    if resp.status_code >= 400:
        _one_line_reason(resp)


@pytest.mark.parametrize(("message", "says"), [
    ({"role": "user", "content": None, "tool_calls": True}, "only assistant messages call"),
    ({"role": "user", "content": "hi", "tool_calls": 5}, "only assistant messages call"),
    ({"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": "x"}]},
     "'function' must be an object"),
])
def test_malformed_tool_calls_are_refused_not_routed_into_a_500(
        fuzz_server: RunningServer, message: dict[str, object], says: str) -> None:
    # a request is routed by its messages' digests before they are checked: the digest must
    # take any shape, and the check then names the message
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}, message]}
    resp = httpx.post(fuzz_server.url + "/v1/chat/completions", json=body, timeout=30)
    assert 400 <= resp.status_code < 500, resp.text
    assert says in _one_line_reason(resp)


def test_limits_on_body_size_and_message_count(fuzz_server: RunningServer) -> None:
    big = {"model": "gpt-4o", "messages": [{"role": "user", "content": "x" * 30_000}]}
    resp = httpx.post(fuzz_server.url + "/v1/chat/completions", json=big)
    assert resp.status_code == 413 and "limit is 20000" in _one_line_reason(resp)

    def chunks() -> Iterator[bytes]:  # no content-length: counted as it streams in
        yield json.dumps(big).encode()

    resp = httpx.post(fuzz_server.url + "/v1/loomctx/sessions/s1/messages", content=chunks())
    assert resp.status_code == 413
    many = {"messages": [{"role": "user", "content": "hi"}] * 51}
    for path, extra in (("/v1/chat/completions", {"model": "gpt-4o"}),
                        ("/v1/loomctx/sessions/s1/messages", {})):
        resp = httpx.post(fuzz_server.url + path, json={**many, **extra})
        assert resp.status_code == 413 and "limit of 50" in _one_line_reason(resp)


@pytest.mark.parametrize(("method", "path", "status"), [
    ("GET", "/v1/nothing-here", 404), ("GET", "/v1/chat/completions", 405),
    ("GET", "/v1/loomctx/builds/none", 404), ("DELETE", "/v1/loomctx/sessions", 405)])
def test_unknown_routes_and_methods(fuzz_server: RunningServer, method: str, path: str,
                                    status: int) -> None:
    resp = httpx.request(method, fuzz_server.url + path)
    assert resp.status_code == status
    _one_line_reason(resp)


def test_headers_are_checked(fuzz_server: RunningServer,
                             start: Callable[..., RunningServer]) -> None:
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    for headers, word in (({"x-loomctx-budget": "lots"}, "integer"),
                          ({"x-loomctx-budget": "3"}, ">= 16"),
                          ({"x-loomctx-session": "s" * 200}, "at most 128")):
        resp = httpx.post(fuzz_server.url + "/v1/chat/completions", json=body, headers=headers)
        assert resp.status_code == 400 and word in _one_line_reason(resp)


def test_an_unreachable_upstream_is_a_502(start: Callable[..., RunningServer]) -> None:
    dead = WindowedFakeServer(window=1000)
    dead.close()  # its port is free again: nothing listens there
    server = start(dead)
    resp = httpx.post(server.url + "/v1/chat/completions", json={
        "model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})
    assert resp.status_code == 502 and "could not be reached" in _one_line_reason(resp)


@pytest.mark.parametrize("ident", ["%00", "x" * 5000, "%F0%9F%92%A9", "..%2F..", "%E4%BD%A0"])
@pytest.mark.parametrize("path", ["/v1/loomctx/sessions/{}", "/v1/loomctx/builds/{}",
                                  "/v1/loomctx/sessions/{}/builds", "/builds/{}",
                                  "/sessions/{}", "/v1/loomctx/sessions/s1/notes/{}"])
def test_odd_ids_in_paths_are_404s(fuzz_server: RunningServer, path: str, ident: str) -> None:
    resp = httpx.get(fuzz_server.url + path.format(ident))
    assert resp.status_code == 404
    _one_line_reason(resp)
