"""Credentials: ``POST /logout`` ends the page cookie (on every process of a shared store), an
edited key file takes effect without a restart, and wrong keys are throttled per address."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from service_helpers import KEYS

from loomctx.cli.main import parser
from loomctx.cli.serve import options_from
from loomctx.service import RunningServer, serve_in_thread
from loomctx.service.login import COOKIE
from loomctx.testing.windowed import WindowedFakeServer

KEY_A, KEY_B = KEYS
A = {"authorization": f"Bearer {KEY_A}"}
CHAT = {"model": "gpt-4o", "max_tokens": 20,
        "messages": [{"role": "user", "content": "Parcel PX-7 left Lyon."}]}


def _signed_in(server: RunningServer, key: str) -> str:
    """The page cookie a browser gets for ``key``."""
    resp = httpx.post(server.url + "/login", data={"key": key, "next": "/docs"})
    assert resp.status_code == 303, resp.text
    return resp.cookies[COOKIE]


def _page(server: RunningServer, cookie: str, session: str = "page-s") -> int:
    return httpx.get(server.url + f"/sessions/{session}", cookies={COOKIE: cookie}).status_code


def _a_session(server: RunningServer, key: str, session: str = "page-s") -> None:
    resp = httpx.post(server.url + "/v1/chat/completions", json=CHAT, headers={
        "authorization": f"Bearer {key}", "x-loomctx-session": session})
    assert resp.status_code == 200, resp.text


def test_logout_ends_the_cookie_even_where_it_was_copied(
        upstream: WindowedFakeServer, start: Callable[..., RunningServer]) -> None:
    """The docs say logout ends the sign-in; a copy of the cookie opened the pages for its
    whole 12 hours after it."""
    server = start(upstream, keys=KEYS)
    _a_session(server, KEY_A)
    cookie = _signed_in(server, KEY_A)
    other = _signed_in(server, KEY_A)  # a second browser of the same tenant
    assert _page(server, cookie) == 200
    out = httpx.post(server.url + "/logout", cookies={COOKIE: cookie})
    assert out.status_code == 303 and COOKIE in out.headers["set-cookie"]  # dropped there
    assert _page(server, cookie) == 401  # and refused here, copy or not
    assert _page(server, other) == 200  # only that sign-in ended


def test_logout_on_one_process_ends_the_cookie_on_the_others(pg_url: str) -> None:
    from loomctx.service import ServiceOptions
    from loomctx.testing import HashingEmbedder

    with WindowedFakeServer(window=3000, default="ok") as upstream:
        servers = [serve_in_thread(ServiceOptions(
            upstream=upstream.url + "/v1", store=pg_url, keys=KEYS, embedder=HashingEmbedder()))
            for _ in range(2)]
        try:
            one, two = servers
            _a_session(one, KEY_A)
            cookie = _signed_in(one, KEY_A)
            assert _page(two, cookie) == 200
            assert httpx.post(one.url + "/logout", cookies={COOKIE: cookie}).status_code == 303
            assert _page(two, cookie) == 401
            assert _page(one, cookie) == 401
        finally:
            for server in servers:
                server.close()


def _until(check: Callable[[], bool], seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_a_key_removed_from_the_key_file_stops_opening_anything(
        upstream: WindowedFakeServer, tmp_path: Path) -> None:
    """``serve --keys FILE``: removing a tenant's line ended nothing until every process
    restarted; now the key and its cookies stop working within the reload bound, and a key
    added to the file starts working."""
    keys = tmp_path / "keys.txt"
    keys.write_text(f"{KEY_A} acme\n{KEY_B} globex\n", encoding="utf-8")
    args = parser(declare=("serve",)).parse_args(
        ["serve", "--upstream", upstream.url + "/v1", "--keys", str(keys),
         "--embedder", "hashing"])
    with serve_in_thread(options_from(args)) as server:
        _a_session(server, KEY_A)
        _a_session(server, KEY_B)
        cookie = _signed_in(server, KEY_A)
        assert _page(server, cookie) == 200
        keys.write_text(f"{KEY_B} globex\nkey-tenant-c-0003 initech\n", encoding="utf-8")

        def gone() -> bool:
            resp = httpx.get(server.url + "/v1/loomctx/sessions",
                             headers={"authorization": f"Bearer {KEY_A}"})
            return resp.status_code == 401

        assert _until(gone), "the removed key still opens the API"
        assert _page(server, cookie) == 401
        sessions = httpx.get(server.url + "/v1/loomctx/sessions",
                             headers={"authorization": "Bearer key-tenant-c-0003"})
        assert sessions.status_code == 200 and sessions.json()["sessions"] == []
        _a_session(server, KEY_B)  # the tenant that stayed is served throughout


def test_a_key_file_broken_mid_edit_keeps_the_keys_it_had(
        upstream: WindowedFakeServer, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    keys = tmp_path / "keys.txt"
    keys.write_text(f"{KEY_A} acme\n", encoding="utf-8")
    args = parser(declare=("serve",)).parse_args(
        ["serve", "--upstream", upstream.url + "/v1", "--keys", str(keys),
         "--embedder", "hashing"])
    with serve_in_thread(options_from(args)) as server:
        keys.write_text("half a line\n", encoding="utf-8")  # three fields: invalid

        def noticed() -> bool:  # the file is looked at when a key is checked
            httpx.get(server.url + "/v1/loomctx/sessions", headers=A)
            return "keys read before stay in force" in caplog.text

        assert _until(noticed)
        _a_session(server, KEY_A)  # neither open to all nor shut to its tenants
        assert httpx.post(server.url + "/v1/chat/completions", json=CHAT).status_code == 401


# -- wrong keys are throttled per client address ---------------------------------------------
def _from(address: str) -> httpx.Client:
    """A client whose connections leave from ``address`` (any of 127.0.0.0/8 on Linux)."""
    return httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=30)


def test_wrong_keys_get_429_at_login_and_the_api_without_locking_out_other_addresses(
        upstream: WindowedFakeServer, start: Callable[..., RunningServer]) -> None:
    """300 wrong keys at /login in 0.2 s were all answered 401 with no lockout; the API too."""
    server = start(upstream, keys=KEYS)  # the default: 10 tries, earned back over 60 s
    guesser, tenant = _from("127.0.0.1"), _from("127.0.0.2")
    logins = [guesser.post(server.url + "/login", data={"key": f"guess-{n:08d}"})
              for n in range(300)]
    assert [r.status_code for r in logins[:10]] == [401] * 10
    assert {r.status_code for r in logins[11:]} == {429}  # (one try may come back meanwhile)
    assert int(logins[-1].headers["retry-after"]) >= 1
    api = guesser.get(server.url + "/v1/loomctx/sessions",
                      headers={"authorization": "Bearer guess-0000-api"})
    assert api.status_code == 429 and int(api.headers["retry-after"]) >= 1
    assert api.json()["error"]["type"] == "rate_limit_error"
    right = guesser.post(server.url + "/v1/chat/completions", json=CHAT, headers=A)
    assert right.status_code == 429  # not even the right key: no oracle for a guesser
    assert guesser.get(server.url + "/v1/loomctx/sessions").status_code == 401  # no key: no guess
    anthropic = guesser.post(server.url + "/v1/messages", headers={"x-api-key": KEY_A},
                             json={**CHAT, "model": "claude-fake-1"})
    assert anthropic.status_code == 429 and anthropic.json()["type"] == "error"
    health = guesser.get(server.url + "/health", headers=A).json()
    assert health == {"status": "ok"}  # up for everyone, the key not even looked at
    # The real tenant elsewhere is not locked out by the guesser.
    assert tenant.post(server.url + "/v1/chat/completions", json=CHAT,
                       headers=A).status_code == 200
    assert tenant.post(server.url + "/login", data={"key": KEY_A}).status_code == 303
    guesser.close()
    tenant.close()
