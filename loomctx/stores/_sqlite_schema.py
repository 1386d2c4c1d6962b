"""The SQLite store's schema, its version check and its connection settings.

Kept apart from :mod:`loomctx.stores.sqlite` so the on-disk format is readable in one screen. The
version lives in ``PRAGMA user_version``: 0 is a new file, a higher version than
``SCHEMA_VERSION`` was written by a newer loomctx and is refused rather than misread.

New files use 16 KiB pages: a 512-d float32 vector is a 2 KB row, and a 4 KiB page holds only one
of them (half the file would be empty space); a 16 KiB page holds seven.

The two FTS5 tables are *external content* tables over ``records`` (no second copy of the text),
kept in step by triggers, so a write to ``records`` and to its indexes is one transaction.

``meta.index_version`` counts the writes a process's in-memory vector index depends on (vectors,
and records changed or deleted), by triggers, so every writer counts them, an older loomctx too.
``PRAGMA data_version`` tells a process that another one wrote; this count tells whether that
write matters to its index: an embedding another process cached does not, and reloading 100k
vectors for it took about a second. Files without the count get it when they open (no version
change: an older loomctx still opens them, and its writes are counted).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from loomctx.errors import StoreError

SCHEMA_VERSION = 2

# A record's identity is (tenant, agent, session, id). SQLite treats NULLs in a UNIQUE index as
# all distinct, so agent and session store None as '' (an empty name is refused on input).
# The unique index leads with (tenant, id): get/delete/set_level by id use it in any scope.
_RECORDS = """
CREATE TABLE records (
    pk INTEGER PRIMARY KEY,
    tenant TEXT NOT NULL,
    agent TEXT NOT NULL,
    session TEXT NOT NULL,
    id TEXT NOT NULL,
    content TEXT NOT NULL,
    terms TEXT NOT NULL,
    level TEXT NOT NULL,
    role TEXT,
    timestamp REAL NOT NULL,
    importance REAL NOT NULL,
    "group" TEXT,
    seq INTEGER NOT NULL,
    message TEXT,
    metadata TEXT NOT NULL,
    content_hash TEXT NOT NULL
);
"""

_RECORD_INDEXES = """
CREATE UNIQUE INDEX records_key ON records (tenant, id, agent, session);
CREATE INDEX records_order ON records (tenant, timestamp, seq, id, agent, session);
CREATE INDEX records_scope ON records (tenant, agent, session, timestamp, seq, id);
CREATE INDEX records_level ON records (tenant, level);
CREATE TRIGGER records_ai AFTER INSERT ON records BEGIN
    INSERT INTO records_trigram (rowid, content) VALUES (new.pk, new.content);
    INSERT INTO records_terms (rowid, terms) VALUES (new.pk, new.terms);
END;
CREATE TRIGGER records_ad AFTER DELETE ON records BEGIN
    INSERT INTO records_trigram (records_trigram, rowid, content)
        VALUES ('delete', old.pk, old.content);
    INSERT INTO records_terms (records_terms, rowid, terms) VALUES ('delete', old.pk, old.terms);
    DELETE FROM vectors WHERE pk = old.pk;
END;
CREATE TRIGGER records_au AFTER UPDATE OF content, terms ON records BEGIN
    INSERT INTO records_trigram (records_trigram, rowid, content)
        VALUES ('delete', old.pk, old.content);
    INSERT INTO records_terms (records_terms, rowid, terms) VALUES ('delete', old.pk, old.terms);
    INSERT INTO records_trigram (rowid, content) VALUES (new.pk, new.content);
    INSERT INTO records_terms (rowid, terms) VALUES (new.pk, new.terms);
END;
"""

_FTS = """
CREATE VIRTUAL TABLE records_trigram USING fts5(
    content, content='records', content_rowid='pk', tokenize='trigram'
);
CREATE VIRTUAL TABLE records_terms USING fts5(
    terms, content='records', content_rowid='pk', tokenize='unicode61'
);
"""

_VECTORS = """
CREATE TABLE vectors (
    pk INTEGER PRIMARY KEY,
    dim INTEGER NOT NULL,
    vec BLOB NOT NULL
);
"""

_EMBEDDING_CACHE = """
CREATE TABLE embedding_cache (
    tenant TEXT NOT NULL,
    model TEXT NOT NULL,
    hash TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vec BLOB NOT NULL,
    PRIMARY KEY (tenant, model, hash)
) WITHOUT ROWID;
"""

_META = """
CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
"""

_INDEX_VERSION = "".join(f"""
CREATE TRIGGER IF NOT EXISTS {name} AFTER {event} ON {table} BEGIN
    UPDATE meta SET value = value + 1 WHERE key = 'index_version';
END;
""" for name, event, table in (
    ("vectors_counted_ai", "INSERT", "vectors"), ("vectors_counted_au", "UPDATE", "vectors"),
    ("vectors_counted_ad", "DELETE", "vectors"), ("records_counted_au", "UPDATE", "records"),
    ("records_counted_ad", "DELETE", "records")))

_DDL = _RECORDS + _FTS + _VECTORS + _EMBEDDING_CACHE + _META + _RECORD_INDEXES

# Version 1 had one global id per record (``id TEXT UNIQUE``), vectors keyed by that id and one
# embedding cache for everyone. Its rows move to the default tenant, keeping their primary keys,
# so the full-text indexes (keyed by pk) stay valid and need no rebuild.
_MIGRATE_1_TO_2 = (
    "DROP TRIGGER records_ai;\nDROP TRIGGER records_ad;\nDROP TRIGGER records_au;\n"
    + _RECORDS.replace("CREATE TABLE records", "CREATE TABLE records_v2")
    + """
INSERT INTO records_v2 (pk, tenant, agent, session, id, content, terms, level, role, timestamp,
                        importance, "group", seq, message, metadata, content_hash)
    SELECT pk, 'default', COALESCE(agent, ''), COALESCE(session, ''), id, content, terms, level,
           role, timestamp, importance, "group", seq, message, metadata, content_hash
    FROM records;
"""
    + _VECTORS.replace("CREATE TABLE vectors", "CREATE TABLE vectors_v2")
    + """
INSERT INTO vectors_v2 (pk, dim, vec)
    SELECT r.pk, v.dim, v.vec FROM vectors v JOIN records r ON r.id = v.id;
"""
    + _EMBEDDING_CACHE.replace("CREATE TABLE embedding_cache", "CREATE TABLE embedding_cache_v2")
    + """
INSERT INTO embedding_cache_v2 (tenant, model, hash, dim, vec)
    SELECT 'default', model, hash, dim, vec FROM embedding_cache;
DROP TABLE records;
DROP TABLE vectors;
DROP TABLE embedding_cache;
ALTER TABLE records_v2 RENAME TO records;
ALTER TABLE vectors_v2 RENAME TO vectors;
ALTER TABLE embedding_cache_v2 RENAME TO embedding_cache;
"""
    + _RECORD_INDEXES
)


def connect(target: str) -> sqlite3.Connection:
    """Open ``target`` in autocommit mode (transactions are explicit) with WAL durability.

    WAL with ``synchronous=NORMAL``: a committed transaction survives the process being killed;
    after a power loss or OS crash the last transactions before the next checkpoint may be lost,
    but the file is never corrupt.
    """
    try:
        conn = sqlite3.connect(target, check_same_thread=False, isolation_level=None)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open SQLite store at {target!r}: {exc}") from exc
    try:
        conn.execute("PRAGMA page_size = 16384")  # no effect on an existing file
        conn.execute("PRAGMA busy_timeout = 10000")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    except sqlite3.Error as exc:
        conn.close()
        raise StoreError(f"cannot open SQLite store at {target!r}: {exc}") from exc
    return conn


def ensure_schema(
    conn: sqlite3.Connection, *, target: str, tokenizer_id: str,
    tokenize_all: Callable[[sqlite3.Connection], None],
) -> None:
    """Create the schema in a new file, migrate an older one, refuse a newer one.

    Also re-indexes after a tokenizer change. A migration runs in the same transaction as the
    version check: it is complete or it never happened.
    """
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"SQLite store {target!r} has schema version {version}, this loomctx reads "
                    f"up to {SCHEMA_VERSION}; upgrade loomctx to open it"
                )
            if version == 0:
                _run(conn, _DDL)
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES ('tokenizer', ?)", (tokenizer_id,)
                )
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            else:
                if version == 1:
                    _run(conn, _MIGRATE_1_TO_2)
                    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                row = conn.execute("SELECT value FROM meta WHERE key = 'tokenizer'").fetchone()
                if row is None or row[0] != tokenizer_id:
                    tokenize_all(conn)
                    conn.execute(
                        "INSERT OR REPLACE INTO meta (key, value) VALUES ('tokenizer', ?)",
                        (tokenizer_id,),
                    )
            _run(conn, _INDEX_VERSION)  # a new file, or one from before the count
            conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('index_version', 0)")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    except sqlite3.Error as exc:
        raise StoreError(f"cannot use {target!r} as a loomctx SQLite store: {exc}") from exc


def index_version(conn: sqlite3.Connection) -> str | None:
    """The count of writes the vector index depends on (None in a file that has none yet)."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'index_version'").fetchone()
    return None if row is None else str(row[0])


def _run(conn: sqlite3.Connection, script: str) -> None:
    for statement in _statements(script):
        conn.execute(statement)


def _statements(script: str) -> list[str]:
    """Split the DDL on the statement ends that ``sqlite3.complete_statement`` agrees with."""
    out, current = [], ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            out.append(current.strip())
            current = ""
    return [s for s in out if s]


__all__ = ["SCHEMA_VERSION", "connect", "ensure_schema", "index_version"]
