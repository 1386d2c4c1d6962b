"""Bulk writes of the PostgreSQL store: COPY, the vector dimension, index rebuilds, re-tokenizing.

COPY sends rows as one stream instead of one statement each (about ten times the throughput of
batched INSERTs here), and an index built once over loaded rows costs far less than the same
index grown row by row: :func:`bulk_load` drops the HNSW and GIN indexes before a large load and
builds them again afterwards, in the same transaction, so no reader ever sees the table without
its indexes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg

from loomctx.errors import ConfigError
from loomctx.stores import _records as rec
from loomctx.stores._pg_rows import INSERT_COLUMNS, TABLE, to_row, tsvector_literal, vector_literal
from loomctx.stores._pg_schema import hnsw_index_sql
from loomctx.stores.protocol import MemoryRecord

_GIN_SQL = f"CREATE INDEX IF NOT EXISTS loomctx_records_terms ON {TABLE} USING gin (terms)"
_WORK_MEM_SQL = "SELECT set_config('maintenance_work_mem', '512MB', true)"
_RETOKENIZE_BATCH = 2000
_DIMS_LOCK = 0x6C6F6F6E


def set_dims(conn: psycopg.Connection, dims: int, *, index: bool = True) -> int:
    """Record the store's vector dimension on first use (and create the HNSW index unless
    ``index`` is False); refuse another dimension. Runs in the caller's transaction, first:
    the advisory lock serialises first writers, so only one creates the index."""
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (_DIMS_LOCK,))
    conn.execute("INSERT INTO loomctx_meta (key, value) VALUES ('dims', %s) "
                  "ON CONFLICT (key) DO NOTHING", (str(dims),))
    row = conn.execute("SELECT value FROM loomctx_meta WHERE key = 'dims'").fetchone()
    stored = int(row[0]) if row else dims
    if stored != dims:
        raise ConfigError(rec.dimension_mismatch("vectors", dims, stored))
    found = conn.execute("SELECT to_regclass('loomctx_records_hnsw') IS NOT NULL").fetchone()
    if index and not (found and found[0]):
        conn.execute(hnsw_index_sql(dims).encode())
    return stored


def copy_rows(conn: psycopg.Connection, rows: list[tuple[Any, ...]]) -> None:
    """Append rows made by :func:`~loomctx.stores._pg_rows.to_row` with one COPY."""
    with conn.cursor() as cur, cur.copy(
            f"COPY {TABLE} ({INSERT_COLUMNS}) FROM STDIN".encode()) as copy:
        for row in rows:
            copy.write_row(row)


def bulk_load(conn: psycopg.Connection, records: list[MemoryRecord], rows: np.ndarray | None,
              dims: int | None, rebuild_index: bool | None) -> None:
    """COPY checked ``records`` (identities already deleted), rebuilding the indexes after
    when ``rebuild_index`` (None: when the batch at least doubles the table)."""
    if rebuild_index is None:
        held = conn.execute(f"SELECT COUNT(*) FROM {TABLE}").fetchone()
        rebuild_index = len(records) >= (held[0] if held else 0)
    if rebuild_index:
        conn.execute("DROP INDEX IF EXISTS loomctx_records_hnsw")
        conn.execute("DROP INDEX IF EXISTS loomctx_records_terms")
    batch = 10_000
    for start in range(0, len(records), batch):
        chunk = records[start : start + batch]
        copy_rows(conn, [to_row(r, None if rows is None else rows[start + i])
                         for i, r in enumerate(chunk)])
    if rebuild_index:
        conn.execute(_WORK_MEM_SQL)
        conn.execute(_GIN_SQL.encode())
    build_index(conn, dims)


def replace_vectors(conn: psycopg.Connection, embed: rec.Embed) -> tuple[int, int | None]:
    """Re-embed every record that has a vector, in the caller's transaction; returns how many
    and the store's new dimension (None when no record has a vector: the next ``put`` decides).

    The table is locked against writes first (reads go on, seeing the old vectors until the
    commit), so no vector of the old dimension can slip in meanwhile. The HNSW index is dropped;
    :func:`build_index` builds it for the new dimension after the commit (an index built in this
    transaction would also read the replaced rows, whose vectors have the old dimension)."""
    conn.execute(f"LOCK TABLE {TABLE} IN EXCLUSIVE MODE")
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (_DIMS_LOCK,))
    rows = conn.execute(f"SELECT pk, content, content_nul FROM {TABLE} "
                        "WHERE embedding IS NOT NULL ORDER BY pk").fetchall()
    contents = [text if nul is None else bytes(nul).decode("utf-8") for _, text, nul in rows]
    vectors = rec.new_vectors(embed, contents)
    conn.execute("DROP INDEX IF EXISTS loomctx_records_hnsw")
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
    """Build the HNSW index for ``dims`` (if the store has a dimension yet) in the caller's
    transaction, then fresh statistics: without them the planner guesses a few dozen rows per
    tenant and sorts the whole table by distance instead of walking the index.

    After a re-embedding this fails (pgvector: "expected N dimensions") while a transaction
    that began before the vectors were replaced is still open: the replaced rows are then kept
    for it, and an index build reads them too."""
    if dims is not None:
        conn.execute(_WORK_MEM_SQL)
        conn.execute(hnsw_index_sql(dims).encode())
    conn.execute(f"ANALYZE {TABLE}")


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


__all__ = ["bulk_load", "copy_rows", "retokenize", "set_dims"]
