"""Running the service for others: what ``/health`` tells whom, the upstream URL's secrets and
query, key files, memory limits, stalled bodies and the browser's sign-in to the pages."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from service_helpers import KEYS

from loomctx.errors import ConfigError
from loomctx.service import RunningServer, ServiceOptions, load_keys, serve_in_thread
from loomctx.service.conversations import Tenants, text_size
from loomctx.service.login import COOKIE, cookie_tenant, cookie_value
from loomctx.service.urls import endpoint, redact
from loomctx.testing import HashingEmbedder
from loomctx.testing.windowed import WindowedFakeServer

KEY_A, KEY_B = KEYS
A, B = ({"authorization": f"Bearer {k}"} for k in KEYS)
CHAT = {"model": "gpt-4o", "max_tokens": 20,
        "messages": [{"role": "user", "content": "Parcel PX-7 left Lyon."}]}
SECRETS = ("admin", "hunter2pw", "s3cr3tv4lue")


def _secret_url(base: str) -> str:
    """``base`` (``http://127.0.0.1:PORT``) with a user, a password and a query secret."""
    return base.replace("http://", "http://admin:hunter2pw@") + \
        "/v1?key=s3cr3tv4lue&api-version=7"


@pytest.fixture
def start_at() -> Iterator[Callable[..., RunningServer]]:
    """Starts services in front of an exact upstream URL: ``start_at(url, **options)``."""
    running: list[RunningServer] = []

    def go(url: str, **options: Any) -> RunningServer:
        running.append(serve_in_thread(ServiceOptions(upstream=url, embedder=HashingEmbedder(),
                                                      **options)))
        return running[-1]

    yield go
    for server in running:
        server.close()


# -- /health and the upstream URL (#1, #15) ------------------------------------------------------
def test_health_says_only_up_without_a_key_and_never_shows_credentials(
        upstream: WindowedFakeServer, start_at: Callable[..., RunningServer]) -> None:
    server = start_at(_secret_url(upstream.url), keys=KEYS)
    for headers in ({}, {"authorization": "Bearer not-a-known-key"}):
        resp = httpx.get(server.url + "/health", headers=headers)
        assert resp.status_code == 200 and resp.json() == {"status": "ok"}
    shown = httpx.get(server.url + "/health", headers=A).json()
    assert shown["status"] == "ok" and shown["upstream"].startswith("http://***@127.0.0.1:")
    assert not any(secret in json.dumps(shown) for secret in SECRETS)
    assert "api-version=7" in shown["upstream"]
    open_service = start_at(_secret_url(upstream.url))  # no keys: every caller is the tenant
    shown = httpx.get(open_service.url + "/health").json()
    assert "upstream" in shown and not any(secret in json.dumps(shown) for secret in SECRETS)


def test_an_unreachable_upstream_is_named_without_its_secrets(
        start_at: Callable[..., RunningServer]) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    server = start_at(_secret_url(f"http://127.0.0.1:{port}"))
    resp = httpx.post(server.url + "/v1/chat/completions", json=CHAT, timeout=30)
    assert resp.status_code in (502, 504), resp.text
    assert "127.0.0.1" in resp.text and not any(secret in resp.text for secret in SECRETS)


def test_the_upstream_secrets_stay_out_of_the_request_log(
        upstream: WindowedFakeServer, start_at: Callable[..., RunningServer],
        caplog: pytest.LogCaptureFixture) -> None:
    server = start_at(_secret_url(upstream.url))
    with caplog.at_level(logging.INFO, logger="httpx"):
        resp = httpx.post(server.url + "/v1/chat/completions", json=CHAT)
    assert resp.status_code == 200, resp.text
    logged = [r.getMessage() for r in caplog.records if r.name == "httpx"]
    assert any("/v1/chat/completions" in line for line in logged)
    assert not any(secret in line for line in logged for secret in SECRETS)


def test_an_upstream_query_is_kept_after_the_api_path(
        upstream: WindowedFakeServer, start_at: Callable[..., RunningServer]) -> None:
    server = start_at(upstream.url + "/v1?api-version=2024-06-01")
    resp = httpx.post(server.url + "/v1/chat/completions", json=CHAT)
    assert resp.status_code == 200, resp.text
    assert upstream.requests[-1].path == "/v1/chat/completions?api-version=2024-06-01"
    resp = httpx.post(server.url + "/v1/messages", json={**CHAT, "model": "claude-fake-1"})
    assert resp.status_code == 200, resp.text
    assert upstream.requests[-1].path == "/v1/messages?api-version=2024-06-01"


@pytest.mark.parametrize(("url", "path", "sent"), [
    ("http://h/v1?api-version=x", "/v1/chat/completions",
     "http://h/v1/chat/completions?api-version=x"),
    ("http://h/openai/v1/?a=1&b=2", "/v1/messages", "http://h/openai/v1/messages?a=1&b=2"),
    ("https://h:8443", "/v1/messages", "https://h:8443/v1/messages"),
])
def test_endpoint_puts_the_path_before_the_query(url: str, path: str, sent: str) -> None:
    assert endpoint(url, path) == sent


def test_redact_hides_userinfo_and_query_values_but_the_api_version() -> None:
    assert redact("https://u:p@h:1/v1?key=k&api-version=2&sig=") == \
        "https://***@h:1/v1?key=***&api-version=2&sig=***"
    assert redact("http://h/v1") == "http://h/v1"
    with pytest.raises(ConfigError) as info:
        ServiceOptions(upstream="ftp://admin:pw@h/v1")
    assert "pw" not in str(info.value) and "admin" not in str(info.value)


# -- key files (#14) ---------------------------------------------------------------------------
def test_a_key_given_to_two_tenants_names_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "keys.txt"
    path.write_text(f"# tenants\n{KEY_A} acme\n{KEY_B} globex\n\n{KEY_A} initech\n")
    with pytest.raises(ConfigError, match=r"lines 2 and 5 .*'acme' and 'initech'") as info:
        load_keys(path)
    assert KEY_A not in str(info.value)
    path.write_text(f"{KEY_A} acme\n{KEY_A} acme\n")  # the same pair twice is harmless
    assert load_keys(path) == {KEY_A: "acme"}


def test_a_json_key_file_twice_names_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    path.write_text(f'{{\n  "{KEY_A}": "acme",\n  "{KEY_B}": "globex",\n  "{KEY_A}": "x"\n}}\n')
    with pytest.raises(ConfigError, match=r"lines 2 and 4 .*'acme' and 'x'"):
        load_keys(path)


@pytest.mark.parametrize("text", [f'{{"{KEY_A}": "acme"}}', f"{KEY_A} acme\n"])
def test_a_key_file_with_a_byte_order_mark_parses(tmp_path: Path, text: str) -> None:
    path = tmp_path / "keys"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert load_keys(path) == {KEY_A: "acme"}


def test_a_too_short_key_is_named_by_its_line_and_tenant_never_by_its_characters(
        tmp_path: Path) -> None:
    path = tmp_path / "keys.txt"
    path.write_text(f"{KEY_A} acme\nZq9x7 globex\n")
    with pytest.raises(ConfigError, match="line 2: the key of tenant 'globex' is 5") as info:
        load_keys(path)
    assert not any(part in str(info.value) for part in ("Zq9x", "Zq", "Zq9x7"))
    with pytest.raises(ConfigError) as info:
        ServiceOptions(upstream="http://h/v1", keys={"Zq9x7": "globex"})
    assert "Zq9" not in str(info.value) and "globex" in str(info.value)


# -- memory kept per tenant (#9) -----------------------------------------------------------------
def test_loaded_sessions_are_bounded_in_bytes(upstream: WindowedFakeServer,
                                              start: Callable[..., RunningServer]) -> None:
    server = start(upstream, max_session_bytes=3000)
    for name in ("one", "two", "three"):
        resp = httpx.post(server.url + "/v1/chat/completions", headers={
            "x-loomctx-session": name}, json={**CHAT, "messages": [
                {"role": "user", "content": f"{name}: " + "parcel " * 180}]})
        assert resp.status_code == 200, resp.text
    loaded = httpx.get(server.url + "/v1/loomctx/sessions").json()["sessions"]
    assert sorted(s["id"] for s in loaded) == ["three", "two"]  # "one" was least recent
    service = server.app.state.service
    assert service.tenants.loaded_bytes("default") <= 3000


def test_kept_builds_are_bounded_in_bytes(upstream: WindowedFakeServer,
                                          start: Callable[..., RunningServer]) -> None:
    server = start(upstream, max_build_bytes=2000)
    ids = []
    for i in range(4):
        resp = httpx.post(server.url + "/v1/chat/completions", headers={
            "x-loomctx-session": f"s{i}"}, json={**CHAT, "messages": [
                {"role": "user", "content": f"{i}: " + "parcel " * 200}]})
        assert resp.status_code == 200, resp.text
        ids.append(resp.headers["x-loomctx-build"])
    kept = [httpx.get(server.url + f"/v1/loomctx/builds/{b}").status_code for b in ids]
    assert kept[-1] == 200 and kept[0] == 404
    assert server.app.state.service.tenants.kept_build_bytes("default") <= 2000


def test_the_newest_build_is_kept_even_over_the_byte_limit() -> None:
    tenants = Tenants(max_builds=10, max_build_bytes=10)
    report = type("Report", (), {"tokens": 100})()
    record = type("R", (), {"id": "b1", "tenant": "t", "report": report, "size": 0})()
    tenants.add_build(record)  # type: ignore[arg-type]
    assert tenants.build("t", "b1") is record and record.size == 400


def test_text_size_counts_text_and_survives_deep_nesting() -> None:
    assert text_size({"role": "user", "content": "héllo", "n": [1, None]}) == \
        4 + 4 + 7 + 5 + 1 + 8 + 8
    deep: object = "x"
    for _ in range(100_000):
        deep = [deep]
    assert text_size(deep) == 1


# -- a stalled body (#20) ----------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/loomctx/sessions", "/login"])
def test_a_body_that_stops_halfway_is_answered_408_and_closed(
        upstream: WindowedFakeServer, start: Callable[..., RunningServer], path: str) -> None:
    server = start(upstream, keys=KEYS, body_timeout=0.3)
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as raw:
        raw.sendall(b"POST " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n"
                    b"authorization: Bearer " + KEY_A.encode() + b"\r\n"
                    b"content-type: application/json\r\ncontent-length: 500\r\n\r\n"
                    b'{"model": "gpt-4o", "mess')
        answer = b""
        while chunk := raw.recv(65536):  # the server closes the connection after answering
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408") and b"connection: close" in head.lower()
    assert "body" in json.loads(body)["error"]["message"]
    assert upstream.requests == []  # nothing was forwarded
    sessions = httpx.get(server.url + "/v1/loomctx/sessions", headers=A).json()["sessions"]
    assert sessions == []


def test_a_chunked_body_that_stops_is_answered_408(
        upstream: WindowedFakeServer, start: Callable[..., RunningServer]) -> None:
    server = start(upstream, body_timeout=0.3)
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as raw:
        raw.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\n"
                    b"content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
                    b"5\r\n{\"mod\r\n")
        answer = b""
        while chunk := raw.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408")
    assert json.loads(body)["type"] == "error"  # the Anthropic route's error shape


def test_a_whole_body_is_not_timed_out_while_a_stream_answers(
        upstream: WindowedFakeServer, start: Callable[..., RunningServer]) -> None:
    server = start(upstream, body_timeout=0.05)
    with httpx.stream("POST", server.url + "/v1/chat/completions",
                      json={**CHAT, "stream": True}) as resp:
        text = "".join(resp.iter_text())
    assert resp.status_code == 200 and "[DONE]" in text


# -- the browser's sign-in to the pages (#18) ----------------------------------------------------
@pytest.fixture
def keyed(upstream: WindowedFakeServer, start: Callable[..., RunningServer]) -> RunningServer:
    return start(upstream, keys=KEYS)


def _a_build(server: RunningServer, headers: dict[str, str]) -> str:
    resp = httpx.post(server.url + "/v1/chat/completions", json=CHAT,
                      headers={**headers, "x-loomctx-session": "page-s"})
    assert resp.status_code == 200, resp.text
    return resp.headers["x-loomctx-build"]


def test_a_browser_signs_in_and_opens_its_pages(keyed: RunningServer) -> None:
    build = _a_build(keyed, A)
    browser = httpx.Client(base_url=keyed.url, headers={"accept": "text/html"})
    first = browser.get(f"/builds/{build}")
    assert first.status_code == 303 and first.headers["location"] == f"/login?next=/builds/{build}"
    form = browser.get(first.headers["location"])
    assert form.status_code == 200 and "name='key'" in form.text
    assert "content-security-policy" in form.headers
    wrong = browser.post("/login", data={"key": "not-a-key-at-all", "next": f"/builds/{build}"})
    assert wrong.status_code == 401 and COOKIE not in browser.cookies
    signed = browser.post("/login", data={"key": KEY_A, "next": f"/builds/{build}"})
    assert signed.status_code == 303 and signed.headers["location"] == f"/builds/{build}"
    cookie = signed.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    assert KEY_A not in cookie and KEY_A not in signed.headers["location"]
    page = browser.get(f"/builds/{build}")
    assert page.status_code == 200 and "<html" in page.text.lower()
    assert browser.get("/sessions/page-s").status_code == 200


def test_the_page_cookie_opens_only_its_tenants_pages(keyed: RunningServer) -> None:
    build = _a_build(keyed, A)
    b_cookie = {COOKIE: cookie_value(KEY_B, "globex")}
    assert httpx.get(keyed.url + f"/builds/{build}", cookies=b_cookie).status_code == 404
    a_cookie = {COOKIE: cookie_value(KEY_A, "acme")}
    api = httpx.get(keyed.url + f"/v1/loomctx/builds/{build}", cookies=a_cookie)
    assert api.status_code == 401  # the API and the proxy want the key itself
    forged = {COOKIE: cookie_value("a-guessed-key-123", "acme")}
    assert httpx.get(keyed.url + f"/builds/{build}", cookies=forged).status_code == 401


def test_a_cookie_ends_with_its_time_or_its_key() -> None:
    value = cookie_value(KEY_A, "acme", now=1000.0)
    assert cookie_tenant(KEYS, value, now=1000.0) == "acme"
    assert cookie_tenant(KEYS, value, now=1000.0 + 13 * 3600) is None
    assert cookie_tenant({KEY_B: "globex"}, value, now=1000.0) is None
    assert cookie_tenant(KEYS, "garbage", now=1000.0) is None


def test_sign_in_returns_only_to_a_local_path(keyed: RunningServer) -> None:
    for target in ("https://evil.example/", "//evil.example/x", "/\\evil.example"):
        resp = httpx.post(keyed.url + "/login", data={"key": KEY_A, "next": target})
        assert resp.status_code == 303 and resp.headers["location"] == "/docs"
