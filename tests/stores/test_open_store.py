"""open_store: one configuration string names the store backend."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from loomctx.errors import ConfigError
from loomctx.session import Session
from loomctx.stores import InMemoryStore, SQLiteStore, open_store
from loomctx.stores.postgres import PostgresStore
from loomctx.stores.protocol import MemoryRecord, Scope


def test_postgres_urls(pg_url: str) -> None:
    for url in (pg_url, pg_url.replace("postgresql://", "postgres://", 1)):
        store = open_store(url)
        try:
            assert isinstance(store, PostgresStore)
            store.put([MemoryRecord(id="a", content="x")])
            assert store.count(scope=Scope()) == 1
        finally:
            store.close()


@pytest.mark.parametrize("form", ["sqlite:///{}", "{}", "path"])
def test_sqlite_urls_and_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               form: str) -> None:
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "mem.db"
    spec = target if form == "path" else form.format("mem.db")
    store = open_store(spec)  # type: ignore[arg-type]
    try:
        assert isinstance(store, SQLiteStore)
        store.put([MemoryRecord(id="a", content="x")])
    finally:
        store.close()
    assert target.exists()
    absolute = open_store(f"sqlite:///{target}")
    try:
        assert absolute.count(scope=Scope()) == 1
    finally:
        absolute.close()


def test_memory_and_in_memory_sqlite() -> None:
    assert isinstance(open_store("memory://"), InMemoryStore)
    store = open_store("sqlite://")
    assert isinstance(store, SQLiteStore) and store.path == ":memory:"
    store.close()


@pytest.mark.parametrize("bad", ["redis://localhost/0", "mysql://x/y", "", "memory://extra"])
def test_bad_urls_name_the_accepted_ones(bad: str) -> None:
    with pytest.raises(ConfigError, match="memory://"):
        open_store(bad)


def test_session_takes_a_url(make_session: Callable[..., Session], tmp_path: Path) -> None:
    session = make_session(store=f"sqlite:///{tmp_path / 's.db'}")
    assert isinstance(session.store, SQLiteStore)
    with pytest.raises(ConfigError, match="unknown store URL scheme 'mysql'"):
        make_session(store="mysql://db/x")


def test_workspace_cli_takes_a_store_url(pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    from loomctx.cli.main import main

    assert main(["workspace", "demo", "--db", pg_url]) == 0
    capsys.readouterr()
    assert main(["workspace", "show", "--db", pg_url, "--session", "demo", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["session"] == "demo" and len(doc["notes"]) == 5
