"""Bulk writes of the PostgreSQL store: COPY, the vector dimension, index rebuilds, re-tokenizing.

COPY sends rows as one stream instead of one statement each (about ten times the throughput of
batched INSERTs here), in PostgreSQL's binary format: the text form of a 896-d vector took
~1.5 ms a row to format in Python (most of the time of a 1M-row load), its binary form ~1 µs;
and an index built once over loaded rows costs far less than the same
index grown row by row: :func:`bulk_load` drops the vector and GIN indexes before a large load and
builds them again afterwards, in the same transaction, so no reader ever sees the table without
its indexes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg
from psycopg.adapt import Dumper
from psycopg.pq import Format
from psycopg.types import TypeInfo

from loomctx.errors import ConfigError, StoreError
from loomctx.stores import _pg_vector as vec
from loomctx.stores import _records as rec
from loomctx.stores._pg_postings import POSTINGS, POSTINGS_INDEX, POSTINGS_INDEX_SQL
from loomctx.stores._pg_rows import (
    COPY_TYPES,
    INSERT_COLUMNS,
    TABLE,
    to_copy_row,
    tsvector_literal,
    vector_literal,
)
from loomctx.stores._pg_schema import TERMS_INDEX_SQL
from loomctx.stores.protocol import MemoryRecord

_WORK_MEM_SQL = "SELECT set_config('maintenance_work_mem', '1GB', true)"
_RETOKENIZE_BATCH = 2000
_DIMS_LOCK = 0x6C6F6F6E
_INDEX_LOCK = 0x6C6F6F6F


def set_dims(conn: psycopg.Connection, dims: int, *, index: bool = True) -> int:
    """Record the store's vector dimension on first use (and create the vector index unless
    ``index`` is False); refuse another dimension. Runs in the caller's transaction, first:
    the advisory lock serialises first writers, so only one creates the index."""
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (_DIMS_LOCK,))
    conn.execute("INSERT INTO loomctx_meta (key, value) VALUES ('dims', %s) "
                  "ON CONFLICT (key) DO NOTHING", (str(dims),))
    row = conn.execute("SELECT value FROM loomctx_meta WHERE key = 'dims'").fetchone()
    stored = int(row[0]) if row else dims
    if stored != dims:
        raise ConfigError(rec.dimension_mismatch("vectors", dims, stored))
    if index and not vec.exists(conn):
        vec.build(conn, dims)
    return stored


class _Encoded(Dumper):
    """Passes a value already in PostgreSQL's binary form (the ``tsvector`` and ``vector``
    columns, which psycopg cannot encode) through a binary COPY."""

    format = Format.BINARY

    def dump(self, obj: Any) -> bytes:
        return bytes(obj)


def copy_rows(conn: psycopg.Connection, records: Sequence[MemoryRecord],
              vectors: np.ndarray | None) -> None:
    """Append checked ``records`` (with ``vectors``, one row each) with one binary COPY."""
    types: list[str | int] = list(COPY_TYPES)
    with conn.cursor() as cur:
        for name in ("tsvector", "vector"):
            info = TypeInfo.fetch(conn, name)
            if info is None:
                raise StoreError(f"PostgreSQL type {name!r} is missing; "
                                 "is the vector extension installed?")
            cur.adapters.register_dumper(None, type(f"_{name}", (_Encoded,), {"oid": info.oid}))
            types[types.index(name)] = info.oid
        with cur.copy(f"COPY {TABLE} ({INSERT_COLUMNS}) FROM STDIN (FORMAT BINARY)".encode()
                      ) as copy:
            copy.set_types(types)
            for i, r in enumerate(records):
                copy.write_row(to_copy_row(r, None if vectors is None else vectors[i]))


def bulk_load(conn: psycopg.Connection, records: list[MemoryRecord], rows: np.ndarray | None,
              dims: int | None, rebuild_index: bool | None) -> None:
    """COPY checked ``records`` (identities already deleted), rebuilding the indexes after
    when ``rebuild_index`` (None: when the batch at least doubles the table)."""
    if rebuild_index is None:
        held = conn.execute(f"SELECT COUNT(*) FROM {TABLE}").fetchone()
        rebuild_index = len(records) >= (held[0] if held else 0)
    if rebuild_index:
        drop_indexes(conn)
    batch = 10_000
    for start in range(0, len(records), batch):
        chunk = records[start : start + batch]
        copy_rows(conn, chunk, None if rows is None else rows[start : start + batch])
    build_indexes(conn, dims)


def drop_indexes(conn: psycopg.Connection) -> None:
    """Drop the search indexes (vector, lexical and postings) before a large load, in the
    caller's transaction; :func:`build_indexes` builds them again."""
    vec.drop(conn)
    conn.execute("DROP INDEX IF EXISTS loomctx_records_terms")
    conn.execute(f"DROP INDEX IF EXISTS {POSTINGS_INDEX}")


def build_indexes(conn: psycopg.Connection, dims: int | None) -> dict[str, float]:
    """Build the lexical and vector indexes and the statistics, in the caller's transaction;
    returns the seconds each step took."""
    spent: dict[str, float] = {}
    start = time.perf_counter()
    conn.execute(_WORK_MEM_SQL)
    conn.execute(TERMS_INDEX_SQL.encode())
    spent["gin_index_s"] = time.perf_counter() - start
    start = time.perf_counter()
    conn.execute(POSTINGS_INDEX_SQL.encode())
    spent["postings_index_s"] = time.perf_counter() - start
    start = time.perf_counter()
    if dims is not None:
        vec.build(conn, dims)
    spent["vector_index_s"] = time.perf_counter() - start
    start = time.perf_counter()
    conn.execute(f"ANALYZE {TABLE}")
    conn.execute(f"ANALYZE {POSTINGS}")
    spent["analyze_s"] = time.perf_counter() - start
    return spent


def replace_vectors(conn: psycopg.Connection, embed: rec.Embed) -> tuple[int, int | None]:
    """Re-embed every record that has a vector, in the caller's transaction; returns how many
    and the store's new dimension (None when no record has a vector: the next ``put`` decides).

    The table is locked against writes first (reads go on, seeing the old vectors until the
    commit), so no vector of the old dimension can slip in meanwhile. The vector index is dropped;
    :func:`build_index` builds it for the new dimension after the commit (an index built in this
    transaction would also read the replaced rows, whose vectors have the old dimension)."""
    conn.execute(f"LOCK TABLE {TABLE} IN EXCLUSIVE MODE")
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (_DIMS_LOCK,))
    rows = conn.execute(f"SELECT pk, content, content_nul FROM {TABLE} "
                        "WHERE embedding IS NOT NULL ORDER BY pk").fetchall()
    contents = [text if nul is None else bytes(nul).decode("utf-8") for _, text, nul in rows]
    vectors = rec.new_vectors(embed, contents)
    vec.drop(conn)
    if not rows:
        conn.execute("DELETE FROM loomctx_meta WHERE key = 'dims'")
        return 0, None
    dims = int(vectors.shape[1])
    with conn.cursor() as cur:
        cur.executemany(f"UPDATE {TABLE} SET embedding = %s::vector WHERE pk = %s".encode(),
                        [(vector_literal(vectors[i]), pk) for i, (pk, _, _) in enumerate(rows)])
    conn.execute("UPDATE loomctx_meta SET value = %s WHERE key = 'dims'", (str(dims),))
    return len(rows), dims


def build_index(conn: psycopg.Connection, dims: int | None) -> None:
    """Build the vector index for ``dims`` (if the store has a dimension yet) in the caller's
    transaction, then fresh statistics: without them the planner guesses a few dozen rows per
    tenant and sorts the whole table by distance instead of walking the index.

    After a re-embedding this fails (pgvector: "expected N dimensions") while a transaction
    that began before the vectors were replaced is still open: the replaced rows are then kept
    for it, and an index build reads them too."""
    if dims is not None:
        conn.execute(_WORK_MEM_SQL)
        vec.build(conn, dims)
    conn.execute(f"ANALYZE {TABLE}")


def rebuild_outgrown(conn: psycopg.Connection, dims: int) -> None:
    """Build the vector index again when the table has outgrown it (see
    :mod:`loomctx.stores._pg_vector`), in the caller's transaction, which must hold no lock on
    the table yet. One writer rebuilds; another that looks meanwhile goes on without waiting,
    and the next to look finds it done."""
    row = conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (_INDEX_LOCK,)).fetchone()
    if row and row[0] and vec.outgrown(conn):
        conn.execute(_WORK_MEM_SQL)
        vec.build(conn, dims)


def ensure_vector_index(conn: psycopg.Connection, dims: int) -> None:
    """Build the vector index when it is missing (a database migrated from schema version 2,
    whose HNSW index the migration dropped), in its own transaction. A re-embedding whose
    index could not be built yet (an older transaction holds the replaced rows) is left
    as it is: searches work without the index, and ``reembed`` says how to build it."""
    if vec.exists(conn):
        return
    try:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_INDEX_LOCK,))
            if not vec.exists(conn):
                build_index(conn, dims)
    except psycopg.errors.DataException:
        pass


def retokenize(conn: psycopg.Connection) -> None:
    """Rebuild every ``terms`` value after the tokenizer changed (or after the migration that
    added the column), in batches, in the caller's transaction."""
    with conn.cursor(name="loomctx_retokenize") as cur:
        cur.execute(f"SELECT pk, content, content_nul FROM {TABLE}")
        while batch := cur.fetchmany(_RETOKENIZE_BATCH):
            values = [(tsvector_literal(bytes(nul).decode("utf-8") if nul is not None else text),
                       pk) for pk, text, nul in batch]
            with conn.cursor() as update:
                update.executemany(f"UPDATE {TABLE} SET terms = %s::tsvector WHERE pk = %s",
                                   values)


__all__ = ["build_index", "build_indexes", "bulk_load", "copy_rows", "drop_indexes",
           "ensure_vector_index", "rebuild_outgrown", "replace_vectors", "retokenize",
           "set_dims"]
