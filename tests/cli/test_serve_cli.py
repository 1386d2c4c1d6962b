"""``loomctx serve``: bad options are one line and exit 2; a real run serves the proxy."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from loomctx.cli.main import main, parser
from loomctx.cli.serve import check_open, is_loopback, options_from
from loomctx.errors import ConfigError
from loomctx.servers import RedisServer
from loomctx.stores.postgres import PostgresStore
from loomctx.stores.protocol import Scope
from loomctx.testing.processes import wait_healthy
from loomctx.testing.windowed import WindowedFakeServer


@pytest.mark.parametrize(("argv", "words"), [
    (["--upstream", "ftp://example"], "http(s) URL"),
    (["--upstream", "http://127.0.0.1:9", "--keys", "/no/such/keys"], "key file"),
    (["--upstream", "http://127.0.0.1:9", "--port", "70000"], "--port"),
    (["--upstream", "http://127.0.0.1:9", "--window", "5"], "window"),
    (["--upstream", "http://127.0.0.1:9", "--budget", "-1"], "budget"),
    (["--upstream", "http://127.0.0.1:9", "--max-messages", "0"], "max_messages"),
    (["--upstream", "http://127.0.0.1:9", "--store", "nosuch://x"], "store"),
    (["--upstream", "http://127.0.0.1:9", "--bus", "nosuch://x"], "bus"),
    (["--upstream", "http://127.0.0.1:9", "--tenant-requests", "0"], "tenant_requests"),
    (["--upstream", "http://127.0.0.1:9", "--tenant-request-mb", "8"], "max_body_bytes"),
    (["--upstream", "http://127.0.0.1:9", "--lock-lines", "0"], "lock_lines"),
])
def test_bad_options_are_one_line_and_exit_2(argv: list[str], words: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("loomctx: error:") and words in err


@pytest.mark.parametrize(("argv", "words"), [
    (["--workers", "2"], "--store 'memory://' keeps sessions in one process"),
    (["--workers", "2", "--store", "/tmp/loomctx-workers.db"], "postgresql://"),
    (["--workers", "2", "--store", "postgresql://u@127.0.0.1:9/db"], "--bus None"),
    (["--workers", "2", "--store", "postgresql://u@127.0.0.1:9/db", "--bus", "memory://"],
     "redis://"),
    (["--workers", "0"], "--workers must be an int >= 1"),
])
def test_more_workers_than_one_need_a_shared_store_and_bus(
        argv: list[str], words: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--upstream", "http://127.0.0.1:9", "--embedder", "hashing",
                 *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("loomctx: error:") and words in err


def test_serve_help_says_what_workers_need(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--workers N" in text and "postgresql://" in text and "redis://" in text


def test_an_open_service_off_loopback_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--upstream", "http://127.0.0.1:9", "--host", "0.0.0.0",
                 "--embedder", "hashing"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--keys" in err and "--allow-open" in err


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("[::1]", True),
    ("localhost", True), ("0.0.0.0", False), ("::", False), ("192.168.1.10", False)])
def test_which_hosts_are_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_an_open_service_off_loopback_needs_allow_open_and_then_warns() -> None:
    assert check_open("127.0.0.1", keys=False, allow_open=False) is None
    assert check_open("0.0.0.0", keys=True, allow_open=False) is None
    warning = check_open("0.0.0.0", keys=False, allow_open=True)
    assert warning is not None and warning.startswith("WARNING") and "OPEN" in warning


def test_credentials_in_the_upstream_url_and_an_upstream_key_are_refused_together(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The HTTP client sends a URL's user:password as ``Authorization: Basic``, which replaced
    the bearer key of ``$LOOMCTX_UPSTREAM_KEY``: the operator must choose, in one line."""
    monkeypatch.setenv("LOOMCTX_UPSTREAM_KEY", "sk-operator-key")
    args = parser(declare=("serve",)).parse_args(
        ["serve", "--upstream", "https://gate:hunter2pw@llm.example/v1", "--embedder", "hashing"])
    with pytest.raises(ConfigError, match="user:password") as refused:
        options_from(args)
    assert "hunter2pw" not in str(refused.value) and "\n" not in str(refused.value)
    monkeypatch.delenv("LOOMCTX_UPSTREAM_KEY")
    assert options_from(args).upstream_api_key is None  # the URL's credentials alone: fine


def test_a_busy_port_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["serve", "--upstream", "http://127.0.0.1:9", "--port", str(port),
                     "--embedder", "hashing"]) == 2
    assert "cannot listen on 127.0.0.1" in capsys.readouterr().err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _serve(upstream: WindowedFakeServer, *args: str, env: dict[str, str] | None = None
           ) -> Iterator[str]:
    """``loomctx serve`` in a child process in front of ``upstream``; yields its base URL."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "loomctx.cli.main", "serve", "--upstream", upstream.url + "/v1",
         "--port", str(port), "--embedder", "hashing", "--window", "4000", *args],
        env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_healthy(base + "/health", proc)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_serve_runs_the_proxy(tmp_path: Path) -> None:
    keys = tmp_path / "keys.txt"
    keys.write_text("# key tenant\nsecret-key-0001 team-a\n", encoding="utf-8")
    with WindowedFakeServer(window=4000, default="served") as upstream, \
            _serve(upstream, "--keys", str(keys)) as base:
        body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
        assert httpx.post(base + "/v1/chat/completions", json=body).status_code == 401
        resp = httpx.post(base + "/v1/chat/completions", json=body,
                          headers={"authorization": "Bearer secret-key-0001"})
        assert resp.status_code == 200
        assert resp.json()["choices"][0]["message"]["content"] == "served"
        assert "authorization" not in upstream.requests[-1].headers  # the key stays here


def test_serve_on_postgres_and_redis_by_configuration(pg_url: str,
                                                      redis_server: RedisServer) -> None:
    """The servers by configuration only: $LOOMCTX_STORE_URL and $LOOMCTX_BUS_URL, which
    ``loomctx dev-servers`` prints."""
    env = {"LOOMCTX_STORE_URL": pg_url, "LOOMCTX_BUS_URL": redis_server.url}
    client = redis.Redis.from_url(redis_server.url)
    before = client.xlen("loomctx:events") if client.exists("loomctx:events") else 0
    with WindowedFakeServer(window=4000, default="It is in Leipzig.") as upstream, \
            _serve(upstream, env=env) as base:
        body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Where is PX-1?"}]}
        resp = httpx.post(base + "/v1/chat/completions", json=body,
                          headers={"x-loomctx-session": "parcel-chat"})
        assert resp.status_code == 200, resp.text
    store = PostgresStore(pg_url)
    try:
        contents = [r.content for r in store.scan(scope=Scope())]
    finally:
        store.close()
    assert "Where is PX-1?" in contents and "It is in Leipzig." in contents
    assert client.xlen("loomctx:events") > before  # the session's events went through Redis
    client.close()


def test_serve_with_workers_on_postgres_and_redis(pg_url: str,
                                                 redis_server: RedisServer) -> None:
    """``--workers 2``: whichever worker takes each request, the session's turns are stored
    once each, in order."""
    with WindowedFakeServer(window=4000, default="noted") as upstream, \
            _serve(upstream, "--workers", "2", "--store", pg_url, "--bus",
                   redis_server.url) as base, httpx.Client(base_url=base) as http:
        for n in range(6):
            body = {"model": "gpt-4o", "messages": [{"role": "user", "content": f"turn {n}"}]}
            resp = http.post("/v1/chat/completions", json=body,
                             headers={"x-loomctx-session": "worked"}, timeout=60)
            assert resp.status_code == 200, resp.text
    store = PostgresStore(pg_url)
    try:
        records = sorted(store.scan(scope=Scope()), key=lambda r: r.seq)
    finally:
        store.close()
    assert [r.content for r in records] == [t for n in range(6) for t in (f"turn {n}", "noted")]


def test_the_core_and_the_cli_never_import_the_web_stack() -> None:
    code = ("import sys, loomctx, loomctx.cli.main as m; m.parser(); "
            "print(sorted(k for k in ('fastapi', 'uvicorn', 'starlette', 'loomctx.service') "
            "if k in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ), timeout=120, check=True).stdout.strip()
    assert out == "[]"
