"""Tenant isolation on every route: a key never reaches another tenant's sessions, builds or
events, and a route without a key is refused.

The routes are read off the app itself, so a new route without a case here fails
``test_every_route_has_a_tenant_case``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from service_helpers import KEYS
from starlette.routing import Route

from loomctx.service import RunningServer, ServiceOptions, create_app, serve_in_thread
from loomctx.service.app import PUBLIC
from loomctx.service.limits import EdgeLimits
from loomctx.testing import HashingEmbedder
from loomctx.testing.windowed import WindowedFakeServer

A, B = ({"authorization": f"Bearer {k}"} for k in KEYS)
B_ANTHROPIC = {"x-api-key": list(KEYS)[1]}
CHAT = {"model": "gpt-4o", "max_tokens": 50,
        "messages": [{"role": "user", "content": "acme's secret plan: launch in May"}]}


def _routes() -> set[tuple[str, str]]:
    app = create_app(ServiceOptions(upstream="http://127.0.0.1:9/v1", keys=KEYS,
                                    embedder=HashingEmbedder()))
    # Included routers are resolved in the OpenAPI schema; plain routes are read directly.
    found = {(m.upper(), path) for path, ops in app.openapi()["paths"].items() for m in ops}
    found |= {(m, r.path) for r in app.routes if isinstance(r, Route)
              for m in (r.methods or ()) if m != "HEAD"}
    return {(m, path) for m, path in found if path not in PUBLIC}


class World:
    """A keyed service where tenant A has a proxied session, an API session and builds."""

    def __init__(self, server: RunningServer, upstream: WindowedFakeServer) -> None:
        self.server, self.upstream = server, upstream
        r = httpx.post(server.url + "/v1/chat/completions", json=CHAT,
                       headers={**A, "x-loomctx-session": "a-chat"})
        assert r.status_code == 200, r.text
        self.build = r.headers["x-loomctx-build"]
        r = httpx.post(server.url + "/v1/loomctx/sessions", headers=A,
                       json={"id": "a-api", "system_prompt": "acme only"})
        assert r.status_code == 201, r.text
        r = httpx.post(server.url + "/v1/loomctx/sessions/a-chat/notes", headers=A,
                       json={"type": "persona", "content": "acme's buyer persona"})
        assert r.status_code == 201 and r.json()["id"] == "persona1", r.text
        r = httpx.post(server.url + "/v1/messages", headers={**A, "x-loomctx-session": "a-msg"},
                       json={**CHAT, "model": "claude-fake-1"})
        assert r.status_code == 200, r.text

    def url(self, path: str) -> str:
        return self.server.url + path.format(session_id="a-chat", build_id=self.build,
                                             note_id="persona1")

    def a_session(self, sid: str = "a-chat") -> dict[str, Any]:
        r = httpx.get(self.url(f"/v1/loomctx/sessions/{sid}"), headers=A)
        assert r.status_code == 200
        return dict(r.json())


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    with WindowedFakeServer(window=3000, default="ok") as upstream:
        server = serve_in_thread(ServiceOptions(  # every wrong key here comes from loopback
            upstream=upstream.url + "/v1", keys=KEYS, embedder=HashingEmbedder(),
            edge=EdgeLimits(auth_failures=100_000)))
        try:
            yield World(server, upstream)
        finally:
            server.close()


def _body(method: str, path: str) -> dict[str, Any] | None:
    if method != "POST":
        return None
    if path.endswith("/messages") and "{session_id}" in path:
        return {"messages": [{"role": "user", "content": "from globex"}]}
    if path == "/v1/messages":
        return {"model": "claude-fake-1", "max_tokens": 50,
                "messages": [{"role": "user", "content": "from globex"}]}
    if path.endswith("/notes"):
        return {"type": "persona", "content": "from globex"}
    if path.endswith("/notes/expand"):
        return {"text": "see @persona1"}
    if path == "/v1/chat/completions":
        return {**CHAT, "messages": [{"role": "user", "content": "from globex"}]}
    return {}


def _no_leak(world: World, method: str, path: str, resp: httpx.Response) -> None:
    """What B got for a route over A's ids: the 404 of an id that does not exist, or only
    B's own things."""
    text = resp.text
    if resp.status_code == 404:
        unknown = httpx.request(method, world.server.url + path.format(
            session_id="no-such-id", build_id="no-such-id", note_id="persona1"),
            json=_body(method, path), headers=B)
        for name in ("a-chat", world.build, "no-such-id"):
            text = text.replace(name, "ID")
        assert text == unknown.text.replace("no-such-id", "ID")
        return
    assert "a-chat" not in text
    assert "acme" not in text and world.build not in text


def _check_proxy(world: World, path: str) -> None:
    """B naming A's session id gets a session of its own; A's is untouched."""
    sid = "a-msg" if path == "/v1/messages" else "a-api"  # not "a-chat": the others' target
    before = world.a_session(sid)["messages"]
    headers = {**(B_ANTHROPIC if path == "/v1/messages" else B), "x-loomctx-session": sid}
    body = _body("POST", path)
    resp = httpx.post(world.url(path), json=body, headers=headers)
    assert resp.status_code == 200, resp.text
    seen = json.dumps(world.upstream.requests[-1].body)
    assert "secret plan" not in seen  # B's request was built from B's memory only
    assert world.a_session(sid)["messages"] == before
    # B sending A's whole conversation is a new session for B, not a continuation of A's.
    if path.endswith("/notes"):
        return {"type": "persona", "content": "from globex"}
    if path.endswith("/notes/expand"):
        return {"text": "see @persona1"}
    if path == "/v1/chat/completions":
        again = httpx.post(world.url(path), json=CHAT, headers=B)
        assert again.status_code == 200 and again.headers["x-loomctx-session"] != "a-chat"


def _check_events(world: World) -> None:
    """B's stream carries B's events only, though A acts while it is open."""
    got: list[dict[str, Any]] = []
    ready = threading.Event()

    def read() -> None:
        with httpx.stream("GET", world.url("/v1/loomctx/events"), headers=B,
                          timeout=20) as resp:
            for line in resp.iter_lines():
                ready.set()
                if line.startswith("data: "):
                    got.append(json.loads(line[6:]))
                    if got[-1]["data"].get("session") == "b-marker" and \
                            got[-1]["kind"] == "build_completed":
                        return

    t = threading.Thread(target=read, daemon=True)
    t.start()
    assert ready.wait(10)
    httpx.post(world.url("/v1/chat/completions"), json=CHAT,
               headers={**A, "x-loomctx-session": "a-chat"})
    httpx.post(world.url("/v1/chat/completions"), json=CHAT,
               headers={**B, "x-loomctx-session": "b-marker"})
    t.join(20)
    assert got and {e["data"]["tenant"] for e in got} == {"globex"}


CASES: dict[tuple[str, str], Callable[[World, str, str], None] | None] = {
    ("POST", "/v1/chat/completions"): lambda w, m, p: _check_proxy(w, p),
    ("POST", "/v1/messages"): lambda w, m, p: _check_proxy(w, p),
    ("GET", "/v1/loomctx/events"): lambda w, m, p: _check_events(w),
    ("POST", "/v1/loomctx/sessions"): None,
    ("GET", "/v1/loomctx/sessions"): None,
    ("GET", "/v1/loomctx/sessions/{session_id}"): None,
    ("POST", "/v1/loomctx/sessions/{session_id}/messages"): None,
    ("POST", "/v1/loomctx/sessions/{session_id}/build"): None,
    ("POST", "/v1/loomctx/sessions/{session_id}/end"): None,
    ("GET", "/v1/loomctx/sessions/{session_id}/builds"): None,
    ("GET", "/v1/loomctx/builds/{build_id}"): None,
    ("POST", "/v1/loomctx/sessions/{session_id}/notes"): None,
    ("GET", "/v1/loomctx/sessions/{session_id}/notes"): None,
    ("GET", "/v1/loomctx/sessions/{session_id}/notes/{note_id}"): None,
    ("POST", "/v1/loomctx/sessions/{session_id}/notes/expand"): None,
    ("GET", "/builds/{build_id}"): None,
    ("GET", "/sessions/{session_id}"): None,
}
"""Every non-public route; None: the generic check (B over A's ids: 404 or only B's own)."""


def test_every_route_has_a_tenant_case() -> None:
    assert _routes() == set(CASES)


@pytest.mark.parametrize(("method", "path"), sorted(CASES))
@pytest.mark.parametrize("key", [None, "not-a-known-key"])
def test_a_route_without_a_valid_key_is_refused(world: World, method: str, path: str,
                                                key: str | None) -> None:
    headers = {} if key is None else {"authorization": f"Bearer {key}"}
    resp = httpx.request(method, world.url(path), json=_body(method, path), headers=headers)
    assert resp.status_code == 401
    assert "\n" not in resp.text.strip() and "API key" in resp.text


@pytest.mark.parametrize(("method", "path"), sorted(CASES))
def test_another_tenants_key_never_reaches_acme(world: World, method: str, path: str) -> None:
    special = CASES[(method, path)]
    if special is not None:
        special(world, method, path)
        return
    resp = httpx.request(method, world.url(path), json=_body(method, path), headers=B)
    if "{" in path:
        assert resp.status_code == 404, resp.text
    else:
        assert resp.status_code in (200, 201), resp.text
    _no_leak(world, method, path, resp)
    assert world.a_session("a-api")["state"] == "active"  # A's session was not ended by B
    if method == "GET" and "{" in path:  # and A itself can read it
        assert httpx.get(world.url(path), headers=A).status_code == 200


def test_the_tenant_dependency_runs_on_the_event_loop() -> None:
    """FastAPI runs a plain-function dependency in a worker thread: a thread hop on every
    request for a dictionary lookup. As a coroutine it runs in place."""
    import inspect

    from loomctx.service.api import tenant

    assert inspect.iscoroutinefunction(tenant)


def test_an_upstream_cookie_never_reaches_another_request(
        start: Callable[..., RunningServer]) -> None:
    """The proxy's one upstream client serves every tenant: a cookie an upstream sets for one
    request (a load balancer's affinity, a session) must not ride along on the next, least of
    all another tenant's."""
    from loomctx.testing.fake_script import Raw

    reply = json.dumps({"id": "r", "object": "chat.completion", "model": "gpt-4o",
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": "ok"}}],
                        "usage": {"prompt_tokens": 5, "completion_tokens": 1,
                                  "total_tokens": 6}})
    with WindowedFakeServer([Raw(body=reply, headers={
            "content-type": "application/json",
            "set-cookie": "affinity=acme-secret; Path=/"})], window=3000,
            default="ok") as upstream:
        server = start(upstream, keys=KEYS)
        with httpx.Client(base_url=server.url, timeout=30) as client:
            for n, headers in enumerate((A, B, A)):  # three conversations (not a retry)
                r = client.post("/v1/chat/completions", headers=headers, json={
                    **CHAT, "messages": [{"role": "user", "content": f"request {n}"}]})
                assert r.status_code == 200, r.text
        assert len(upstream.requests) == 3
        assert [q.headers.get("cookie") for q in upstream.requests] == [None, None, None]
        assert list(server.app.state.proxy.client.cookies.jar) == []  # not even kept
