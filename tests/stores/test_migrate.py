"""Re-embedding a store: ``loomctx.stores.reembed`` and ``loomctx store reembed``.

The story they exist for: a SQLite store written under the old default embedder (USE, 512
dimensions) refuses the new default (896); re-embedding it keeps every record and opens it with
the new one. Each store's own ``reembed`` is held to the conformance suite
(:mod:`loomctx.testing.store_conformance`); these tests cover the helper and the command.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loomctx.cli.main import main
from loomctx.embed import HashingEmbedder, UniversalSentenceEncoder, default_embedder
from loomctx.errors import ConfigError
from loomctx.session import Session
from loomctx.stores import InMemoryStore, MemoryRecord, Scope, SQLiteStore, reembed

FACT = "Melanie adopted a grey rescue dog named Biscuit in March."
CHATTER = ["Good morning! How was the weekend?", "We painted the kitchen a pale yellow.",
           "The train was late again today.", "I finally finished that mystery novel."]


def test_reembed_embeds_what_a_session_embeds() -> None:
    store = InMemoryStore()
    decorated = "[m1] (2023-05-08 13:56) Alice: apples and pears"
    store.put([MemoryRecord(id="m1", content=decorated)], np.stack([np.eye(8)[0]]))
    embedder = HashingEmbedder(dim=64)
    assert reembed(store, embedder) == 1
    hit = store.search_vector(embedder.embed(["Alice: apples and pears"])[0], scope=Scope(),
                              limit=1)[0]
    assert hit.record.content == decorated  # the record is kept as it was
    assert hit.score == pytest.approx(1.0, abs=1e-5)  # the vector is the undecorated text's


def test_reembed_names_what_it_cannot_use() -> None:
    with pytest.raises(ConfigError, match="no reembed method"):
        reembed(object(), HashingEmbedder())
    with pytest.raises(ConfigError, match="takes an embedder"):
        reembed(InMemoryStore(), "hashing")  # type: ignore[arg-type]


def _old_store(path: Path) -> None:
    """A SQLite store as the old default (USE) left it."""
    session = Session("s1", store=str(path), embedder=UniversalSentenceEncoder())
    session.add_messages_sync([{"role": "user", "content": text} for text in [FACT, *CHATTER]])
    session.store.close()


def test_old_default_store_moves_to_the_new_default(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "memory.db"
    _old_store(path)
    with pytest.raises(ConfigError, match="loomctx store reembed"):  # the error names the fix
        Session("s2", store=str(path))  # fails on opening, not by recalling nothing later
    assert main(["store", "reembed", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"re-embedded 5 records of {path} with joint(")
    assert "(dimension 896)" in out

    store = SQLiteStore(path)
    try:
        kept = store.scan(scope=Scope(agent="agent", session="s1"))
        assert [r.content for r in kept] == [FACT, *CHATTER]
        query = default_embedder().embed(["What is the name of Melanie's dog?"])[0]
        best = store.search_vector(query, scope=Scope(), limit=5)
        assert best[0].record.content == FACT
    finally:
        store.close()
    session = Session("s1", store=str(path))  # the default embedder now works
    session.add_messages_sync([{"role": "user", "content": "Any news about your pets?"}])
    result = session.build_sync("What is the name of Melanie's dog?", max_tokens=300)
    assert result.report.failed_sources == []
    assert any(m["content"] == FACT for m in result.rendered.payload["messages"])
    session.store.close()


@pytest.mark.parametrize("target, message", [
    ("missing.db", "no file at"),
    ("sqlite:///missing.db", "no file at"),
    ("memory://", "in memory"),
    ("sqlite://", "in memory"),
    ("ftp://host/db", "unknown store URL scheme"),
    (".", "no file at"),
])
def test_cli_refuses_what_holds_nothing_to_reembed(
    target: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["store", "reembed", target, "--embedder", "hashing"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("loomctx: error: ") and message in err and "\n" not in err
    assert not (tmp_path / "missing.db").exists()  # nothing was created


def test_cli_refuses_a_file_that_is_not_a_store(tmp_path: Path) -> None:
    junk = tmp_path / "notes.txt"
    junk.write_text("not a database\n" * 100, encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "loomctx.cli.main", "store", "reembed",
                          str(junk), "--embedder", "hashing"], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 2
    assert out.stderr.startswith("loomctx: error: ") and out.stderr.count("\n") == 1
    assert "Traceback" not in out.stderr
    assert junk.read_text(encoding="utf-8") == "not a database\n" * 100


def test_cli_reembeds_with_the_named_embedder(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.db"
    store = SQLiteStore(path)
    store.put([MemoryRecord(id=f"r{i}", content=text) for i, text in enumerate(CHATTER)],
              np.stack([np.eye(8)[i] for i in range(len(CHATTER))]))
    store.put([MemoryRecord(id="bare", content="kept without a vector")])
    store.close()
    assert main(["store", "reembed", f"sqlite:///{path}", "--embedder", "hashing"]) == 0
    captured = capsys.readouterr()
    assert "re-embedded 4 records" in captured.out
    assert captured.err.startswith("embedded 4 texts (")  # progress, one line per embedder call
    store = SQLiteStore(path)
    try:
        embedder = HashingEmbedder()
        hits = store.search_vector(embedder.embed([CHATTER[2]])[0], scope=Scope(), limit=10)
        assert hits[0].record.content == CHATTER[2]
        assert len(hits) == 4
    finally:
        store.close()


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(min_size=1, max_size=30).filter(
    lambda t: not t.startswith(("postgres", "-")) and "\x00" not in t))
def test_cli_any_store_argument_is_one_error_line_and_creates_nothing(
    tmp_path_factory: pytest.TempPathFactory, target: str
) -> None:
    where = tmp_path_factory.mktemp("fuzz")
    here = Path.cwd()
    os.chdir(where)
    try:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["store", "reembed", target, "--embedder", "hashing"])
    finally:
        os.chdir(here)
    assert code == 2
    assert err.getvalue().startswith("loomctx: error: ") and err.getvalue().count("\n") == 1
    assert list(where.iterdir()) == []
