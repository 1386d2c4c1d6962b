"""SQLiteStore: the conformance suite, plus persistence, crash safety and bad input."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from loomctx.errors import ConfigError, StoreError
from loomctx.stores import MemoryRecord, SQLiteStore
from loomctx.stores._sqlite_schema import SCHEMA_VERSION
from loomctx.stores.protocol import Scope
from loomctx.testing.store_conformance import (
    AGENT,
    TENANT,
    ReembedConformance,
    StoreConformance,
    rec,
    unit,
)

ROOT = Path(__file__).resolve().parents[2]


class TestSQLiteStoreInMemory(StoreConformance, ReembedConformance):
    @pytest.fixture
    def store(self) -> Iterator[SQLiteStore]:
        s = SQLiteStore()
        yield s
        s.close()


class TestSQLiteStoreOnDisk(StoreConformance, ReembedConformance):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[SQLiteStore]:
        s = SQLiteStore(tmp_path / "mem.db")
        yield s
        s.close()


def test_persists_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "mem.db"
    with SQLiteStore(path) as store:
        store.put([rec("a", "我喜欢在周末去爬山", agent=AGENT, session="s")], np.stack([unit(1)]))
        store.cache_vectors("model", {"hash": unit(0, 1)}, tenant="default")
    with SQLiteStore(str(path)) as store:
        assert store.get(["a"], scope=TENANT)[0].content == "我喜欢在周末去爬山"
        assert [h.record.id for h in store.search_lexical("爬山", scope=TENANT)] == ["a"]
        assert [h.record.id for h in store.search_vector(unit(1), scope=TENANT)] == ["a"]
        assert set(store.cached_vectors("model", ["hash"], tenant="default")) == {"hash"}


def test_default_creates_nothing_on_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with SQLiteStore() as store:
        store.put([rec("a")])
        assert store.path == ":memory:"
    assert list(tmp_path.iterdir()) == []


def test_path_creates_only_that_file(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "only.db") as store:
        store.put([rec("a")])
    assert [p.name for p in tmp_path.iterdir()] == ["only.db"]


def test_wal_mode_on_disk(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "w.db") as store:
        assert store._db().execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert store._db().execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL


def test_newer_schema_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    SQLiteStore(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="upgrade loomctx"):
        SQLiteStore(path)


def test_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError):
        SQLiteStore(path)
    with pytest.raises(StoreError):
        SQLiteStore(tmp_path / "missing-dir" / "x.db")
    with pytest.raises(ConfigError):
        SQLiteStore("")


def test_tokenizer_change_reindexes(tmp_path: Path) -> None:
    path = tmp_path / "tok.db"
    with SQLiteStore(path) as store:
        store.put([rec("a", "我喜欢在周末去爬山")])
    with sqlite3.connect(path) as conn:  # simulate an index built by another tokenizer
        conn.execute("UPDATE records SET terms = 'stale'")
        conn.execute("UPDATE meta SET value = 'old-tokenizer' WHERE key = 'tokenizer'")
    with SQLiteStore(path) as store:
        assert [h.record.id for h in store.search_lexical("爬山", scope=TENANT)] == ["a"]
        assert store.search_lexical("stale", scope=TENANT) == []


def test_short_terms_and_substrings(tmp_path: Path) -> None:
    with SQLiteStore() as store:
        store.put([rec("ai", "AI agents use embeddings"), rec("go", "go 语言 并发")])
        assert [h.record.id for h in store.search_lexical("ai", scope=TENANT)] == ["ai"]
        assert [h.record.id for h in store.search_lexical("embed", scope=TENANT)] == ["ai"]
        assert [h.record.id for h in store.search_lexical("语", scope=TENANT)] == ["go"]


def test_huge_content_round_trips() -> None:
    text = ("large block of words 大段文字 " * 200_000)[: 5 * 1024 * 1024]
    with SQLiteStore() as store:
        store.put([rec("big", text), rec("small", "needle in a haystack")])
        assert store.get(["big"], scope=TENANT)[0].content == text
        assert [h.record.id for h in store.search_lexical("needle", scope=TENANT)] == ["small"]
        assert store.search_lexical("大段文字", scope=TENANT)[0].record.id == "big"


def test_surrogates_never_corrupt_a_row(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "s.db") as store:
        store.put([rec("s", "\udc80\ud83d tail", metadata={"k": "\ud800"})])
        got = store.get(["s"], scope=TENANT)[0]
        assert got.content == "\ufffd\ufffd tail"
        assert got.metadata == {"k": "\ud800"}  # JSON escapes keep metadata exact
        assert store._db().execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_vector_cache_sees_other_connections(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    with SQLiteStore(path) as reader, SQLiteStore(path) as writer:
        writer.put([rec("a")], np.stack([unit(1)]))
        assert [h.record.id for h in reader.search_vector(unit(1), scope=TENANT)] == ["a"]
        writer.put([rec("b")], np.stack([unit(1, 0.01)]))
        writer.set_level(["a"], "L1", scope=TENANT)
        assert [h.record.id for h in reader.search_vector(unit(1), scope=TENANT)] == ["a", "b"]
        hits = reader.search_vector(unit(1), level="L1", scope=TENANT)
        assert [h.record.id for h in hits] == ["a"]


def test_scan_pages_through_many_rows() -> None:
    with SQLiteStore() as store:
        store.put([rec(f"r{i:05d}", timestamp=float(i % 7), seq=i) for i in range(2500)])
        keys = [(r.timestamp, r.seq) for r in store.scan(scope=TENANT)]
        assert len(keys) == 2500
        assert keys == sorted(keys)


_WRITER = textwrap.dedent(
    """
    import sys
    import numpy as np
    from loomctx.stores import MemoryRecord, SQLiteStore

    store = SQLiteStore(sys.argv[1])
    rng = np.random.default_rng(0)
    i = 0
    while True:
        rid = f"rec-{i}"
        text = f"record number {i} 第{i}条记录 " + "filler words " * 20
        store.put([MemoryRecord(id=rid, content=text, seq=i)], rng.normal(size=(1, 16)))
        print(rid, flush=True)
        i += 1
    """
)


def test_kill_mid_stream_loses_no_committed_record(tmp_path: Path) -> None:
    path = tmp_path / "killed.db"
    script = tmp_path / "writer.py"
    script.write_text(_WRITER)
    paths = [str(ROOT), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    proc = subprocess.Popen(
        [sys.executable, str(script), str(path)], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None
    committed = []
    try:
        for line in proc.stdout:
            committed.append(line.strip())
            if len(committed) >= 60:
                break
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    committed += [line.strip() for line in proc.stdout if line.strip()]
    assert len(committed) >= 60, "writer died before writing"
    with SQLiteStore(path) as store:
        assert store._db().execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        found = {r.id for r in store.get(committed, scope=TENANT)}
        assert found == set(committed)
        assert store.count(scope=TENANT) >= len(committed)
        assert store.search_lexical("第5条记录", scope=TENANT)[0].record.id == "rec-5"
        assert len(store.search_vector(np.ones(16), limit=5, scope=TENANT)) == 5


@pytest.mark.parametrize(
    ("records", "vectors", "match"),
    [
        ([MemoryRecord(id="", content="x")], None, "non-empty"),
        ([rec("d"), rec("d")], None, "'d'"),
        ([rec("n")], np.array([[np.nan] * 4]), "NaN"),
    ],
)
def test_bad_input(records: list[MemoryRecord], vectors: object, match: str) -> None:
    with SQLiteStore() as store:
        with pytest.raises(ConfigError, match=match):
            store.put(records, vectors)  # type: ignore[arg-type]
        assert store.count(scope=TENANT) == 0


def test_narrow_vector_filter_matches_full_scoring() -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((40, 8))
    records = [rec(f"r{i:02d}", agent=AGENT, session="rare" if i % 13 == 0 else "common")
               for i in range(40)]
    query = rng.standard_normal(8)
    with SQLiteStore() as store:
        store.put(records, vectors)
        hits = store.search_vector(query, scope=Scope(agent=AGENT, session="rare"))
    unit_rows = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosines = unit_rows @ (query / np.linalg.norm(query))
    expected = sorted((i for i in range(40) if i % 13 == 0), key=lambda i: -cosines[i])
    assert [h.record.id for h in hits] == [f"r{i:02d}" for i in expected]
    assert [h.score for h in hits] == pytest.approx([cosines[i] for i in expected], abs=1e-5)
