"""SQLiteStore scoping: persistence across reopen, the v1 → v2 migration, crowded tenants."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np

from loomctx.stores import MemoryRecord, SQLiteStore
from loomctx.stores._sqlite_schema import SCHEMA_VERSION
from loomctx.stores._text import tokenize
from loomctx.stores.protocol import Scope
from loomctx.testing.store_conformance import unit

# The schema of loomctx stores written before scopes existed (schema version 1): one global id.
_V1_DDL = """
CREATE TABLE records (
    pk INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    content TEXT NOT NULL,
    terms TEXT NOT NULL,
    level TEXT NOT NULL,
    role TEXT,
    timestamp REAL NOT NULL,
    session TEXT,
    agent TEXT,
    importance REAL NOT NULL,
    "group" TEXT,
    seq INTEGER NOT NULL,
    message TEXT,
    metadata TEXT NOT NULL,
    content_hash TEXT NOT NULL
);
CREATE INDEX records_order ON records (timestamp, seq, id);
CREATE INDEX records_session ON records (session, timestamp, seq);
CREATE INDEX records_level ON records (level);
CREATE INDEX records_agent ON records (agent);
CREATE VIRTUAL TABLE records_trigram USING fts5(
    content, content='records', content_rowid='pk', tokenize='trigram'
);
CREATE VIRTUAL TABLE records_terms USING fts5(
    terms, content='records', content_rowid='pk', tokenize='unicode61'
);
CREATE TRIGGER records_ai AFTER INSERT ON records BEGIN
    INSERT INTO records_trigram (rowid, content) VALUES (new.pk, new.content);
    INSERT INTO records_terms (rowid, terms) VALUES (new.pk, new.terms);
END;
CREATE TRIGGER records_ad AFTER DELETE ON records BEGIN
    INSERT INTO records_trigram (records_trigram, rowid, content)
        VALUES ('delete', old.pk, old.content);
    INSERT INTO records_terms (records_terms, rowid, terms) VALUES ('delete', old.pk, old.terms);
END;
CREATE TRIGGER records_au AFTER UPDATE OF content, terms ON records BEGIN
    INSERT INTO records_trigram (records_trigram, rowid, content)
        VALUES ('delete', old.pk, old.content);
    INSERT INTO records_terms (records_terms, rowid, terms) VALUES ('delete', old.pk, old.terms);
    INSERT INTO records_trigram (rowid, content) VALUES (new.pk, new.content);
    INSERT INTO records_terms (rowid, terms) VALUES (new.pk, new.terms);
END;
CREATE TABLE vectors (
    id TEXT PRIMARY KEY,
    dim INTEGER NOT NULL,
    vec BLOB NOT NULL
);
CREATE TABLE embedding_cache (
    model TEXT NOT NULL,
    hash TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vec BLOB NOT NULL,
    PRIMARY KEY (model, hash)
) WITHOUT ROWID;
CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
"""


def _write_v1(path: Path) -> None:
    """A version-1 file as the old store wrote it: records, a vector, an embedding cache row."""
    rows = [
        ("m1", "the shipment is on customs hold at Lyon", "s1", "planner", 1.0),
        ("m2", "我喜欢在周末去爬山", "s2", "planner", 2.0),
        ("note", "a note without owner", None, None, 3.0),
        ("orphan", "a session row without agent", "s9", None, 4.0),
    ]
    with sqlite3.connect(path) as conn:
        conn.executescript(_V1_DDL)
        conn.executemany(
            "INSERT INTO records (id, content, terms, level, role, timestamp, session, agent, "
            "importance, \"group\", seq, message, metadata, content_hash) "
            "VALUES (?, ?, ?, 'L4', 'user', ?, ?, ?, 0.5, NULL, 0, NULL, '{}', 'h')",
            [(i, c, " ".join(tokenize(c)), ts, s, a) for i, c, s, a, ts in rows],
        )
        conn.execute("INSERT INTO vectors (id, dim, vec) VALUES ('m1', ?, ?)",
                     (8, unit(1).tobytes()))
        conn.execute("INSERT INTO embedding_cache (model, hash, dim, vec) VALUES ('e', 'h1', 8, ?)",
                     (unit(0, 1).tobytes(),))
        conn.execute("INSERT INTO meta (key, value) VALUES ('tokenizer', 'an-older-tokenizer')")
        conn.execute("PRAGMA user_version = 1")


def test_a_version_1_file_is_migrated_into_the_default_tenant(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    _write_v1(path)
    s1 = Scope(agent="planner", session="s1")
    with SQLiteStore(path) as store:
        assert store._db().execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 2
        assert store._db().execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        [m1] = store.get(["m1"], scope=s1)
        assert (m1.tenant, m1.agent, m1.session, m1.importance) == ("default", "planner", "s1", 0.5)
        assert [r.id for r in store.scan(scope=Scope())] == ["m1", "m2", "note", "orphan"]
        assert [r.id for r in store.scan(scope=Scope(agent="planner"))] == ["m1", "m2"]
        assert [h.record.id for h in store.search_lexical("customs", scope=s1)] == ["m1"]
        assert [h.record.id for h in store.search_lexical("爬山", scope=Scope())] == ["m2"]
        assert [h.record.id for h in store.search_vector(unit(1), scope=Scope())] == ["m1"]
        assert set(store.cached_vectors("e", ["h1"], tenant="default")) == {"h1"}
        assert store.cached_vectors("e", ["h1"], tenant="acme") == {}
        # The old global id no longer blocks the same id in another session.
        store.put([MemoryRecord(id="m1", content="second session", agent="planner",
                                session="s2", timestamp=5.0)])
        assert [r.session for r in store.get(["m1"], scope=Scope(agent="planner"))] == [
            "s1", "s2"
        ]
        # Deleting a migrated record removes its vector and its full-text entries.
        assert store.delete(["m1"], scope=s1) == 1
        assert store.search_vector(unit(1), scope=Scope()) == []
        assert store.search_lexical("customs", scope=Scope()) == []
    with SQLiteStore(path) as store:  # a migrated file opens as a current one
        assert store.count(scope=Scope()) == 4


def test_same_id_in_two_sessions_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "two.db"
    s1, s2 = Scope(agent="a", session="s1"), Scope(agent="a", session="s2")
    with SQLiteStore(path) as store:
        store.put([MemoryRecord(id="m1", content="from one", agent="a", session="s1")],
                  np.stack([unit(1)]))
    with SQLiteStore(path) as store:
        store.put([MemoryRecord(id="m1", content="from two", agent="a", session="s2")],
                  np.stack([unit(0, 1)]))
    with SQLiteStore(path) as store:
        assert [r.content for r in store.get(["m1"], scope=s1)] == ["from one"]
        assert [r.content for r in store.get(["m1"], scope=s2)] == ["from two"]
        assert [h.record.content for h in store.search_vector(unit(1), scope=s2)] == ["from two"]


def test_lexical_search_finds_a_tenant_crowded_out_by_others() -> None:
    """A tenant-wide search must not lose the tenant's matches to another tenant's top ranks."""
    many = [MemoryRecord(id=f"x{i}", content="harbor harbor harbor", tenant="big")
            for i in range(300)]
    mine = [MemoryRecord(id=f"m{i}", content=f"harbor and {i} other words here", tenant="small")
            for i in range(3)]
    with SQLiteStore() as store:
        store.put([*many, *mine])
        hits = store.search_lexical("harbor", scope=Scope(tenant="small"), limit=10)
        assert sorted(h.record.id for h in hits) == ["m0", "m1", "m2"]
        big = store.search_lexical("harbor", scope=Scope(tenant="big"), limit=10)
        assert len(big) == 10 and {h.record.tenant for h in big} == {"big"}


def test_vector_index_kept_in_place_stays_scoped(tmp_path: Path) -> None:
    """Appends to the live vector index carry their scope: no reload is needed to stay isolated."""
    with SQLiteStore(tmp_path / "live.db") as store:
        store.put([MemoryRecord(id="a", content="x", tenant="t1")], np.stack([unit(1)]))
        assert len(store.search_vector(unit(1), scope=Scope(tenant="t1"))) == 1
        index = store._vectors
        store.put([MemoryRecord(id="a", content="x", tenant="t2", agent="b", session="s")],
                  np.stack([unit(1)]))
        store.set_level(["a"], "L2", scope=Scope(tenant="t2"))
        assert store._vectors is index
        hits = store.search_vector(unit(1), scope=Scope(tenant="t2"))
        assert [h.record.tenant for h in hits] == ["t2"]
        assert store.search_vector(unit(1), scope=Scope(tenant="t1"), level="L2") == []
        assert len(store.search_vector(unit(1), scope=Scope(tenant="t2"), level="L2")) == 1
