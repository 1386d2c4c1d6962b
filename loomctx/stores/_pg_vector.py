"""The PostgreSQL store's vector index: IVFFlat over half-precision copies of the embeddings.

Why not HNSW (the index before schema version 3): on the 2-core machine of the benchmarks, an
HNSW graph of a million 256-d vectors did not finish building in 45 minutes, one of 50k 896-d
``halfvec`` rows (the default embedder's dimension) not in 5 minutes, and even a graph of
binary-quantized vectors took 44–72 s per 100k rows. Searching one tenant through a graph that
does not know tenants walked ~10 nodes for each row of the tenant it kept when ten tenants
share the table (120–270 ms for 256 rows at 100k, binary-quantized and re-scored). The IVFFlat
index of ``halfvec`` copies builds in ~10 s per 100k rows (~6 minutes for a million), keeps the
vectors inside the index (a scan reads no 3.6 kB heap value), and a search reads
:data:`PROBES` lists of ~:data:`ROWS_PER_LIST` rows whatever the table's size; pgvector's
iterative scan reads more lists until the scope's ``limit`` rows are found. At a million
memories its 256 nearest of one tenant held 93–95% of the exact 256 and 96–99% of the exact
top 10 (``benchmarks/bench_pg_scale.py``).

An IVFFlat index is as good as the rows it was built from (its lists are k-means centroids of
them), so the store builds it again when the table has grown :data:`GROWTH` times since the
last build (counted by ``pg_class.reltuples``, which autovacuum keeps current), inside the write
that crossed the line: the rebuilds cost a constant share of all writes, but the write that
triggers one waits for it (minutes at a million rows: load such a store with ``bulk_load``,
which always builds it after the copy). Scores are computed again from the stored float32
vectors: halfvec only orders the candidates.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import psycopg
from psycopg.adapt import Dumper
from psycopg.pq import Format

from loomctx.stores._pg_rows import TABLE, vector_binary

INDEX = "loomctx_records_vec"
"""The index's name (the HNSW index of schema versions 1–2 was ``loomctx_records_hnsw``)."""
ROWS_PER_LIST = 1000
"""Rows per IVF list up to a million rows (pgvector's advice); sqrt(rows) lists beyond."""
PROBES = 10
"""Lists a search reads first; the iterative scan reads more while the scope has too few."""
GROWTH = 4
"""The index is rebuilt once the table holds this many times the rows it was built from."""
MIN_REBUILD_ROWS = 4000
"""No rebuild before the table has this many rows (fewer than four lists is still one scan)."""


def search_settings(probes: int = PROBES, *, local: bool = False) -> str:
    """The vector search settings, for a whole connection or (``local``) one transaction."""
    scope = "true" if local else "false"
    return (f"SELECT set_config('ivfflat.probes', '{int(probes)}', {scope}), "
            f"set_config('ivfflat.iterative_scan', 'relaxed_order', {scope})")


def lists_for(rows: int) -> int:
    """IVF lists for a table of ``rows`` rows."""
    if rows <= 1_000_000:
        return max(1, rows // ROWS_PER_LIST)
    return int(math.sqrt(rows))


class QueryVector:
    """A query vector sent as a binary ``vector`` parameter (``vector_recv``'s form): formatting
    896 floats as text took ~1.4 ms of Python per search, and the server parsed the text twice
    (once per cast). Write its placeholder as ``%s::vector(dims)``; the index's halfvec is cast
    from that (:func:`order_sql`), so the same bytes serve both."""

    __slots__ = ("data",)

    def __init__(self, row: np.ndarray) -> None:
        self.data = vector_binary(row)


class _QueryVectorDumper(Dumper):
    format = Format.BINARY
    oid = 0  # unknown: the server takes the type from the placeholder's cast

    def dump(self, obj: Any) -> bytes:
        return bytes(obj.data)


psycopg.adapters.register_dumper(QueryVector, _QueryVectorDumper)


def order_sql(dims: int) -> str:
    """The distance the index orders by, for ``%s`` the query's :class:`QueryVector`."""
    d = int(dims)
    return f"(r.embedding::halfvec({d}) <=> (%s::vector({d}))::halfvec({d}))"


def drop(conn: psycopg.Connection) -> None:
    conn.execute(f"DROP INDEX IF EXISTS {INDEX}")
    conn.execute("DROP INDEX IF EXISTS loomctx_records_hnsw")


def build(conn: psycopg.Connection, dims: int) -> None:
    """(Re)build the index over the rows there are now, in the caller's transaction, and
    remember how many rows it was built from."""
    drop(conn)
    row = conn.execute(f"SELECT COUNT(*) FROM {TABLE} WHERE embedding IS NOT NULL").fetchone()
    rows = int(row[0]) if row else 0
    conn.execute(f"CREATE INDEX {INDEX} ON {TABLE} USING ivfflat "
                 f"((embedding::halfvec({int(dims)})) halfvec_cosine_ops) "
                 f"WITH (lists = {lists_for(rows)})".encode())
    conn.execute("INSERT INTO loomctx_meta (key, value) VALUES ('vector_index_rows', %s) "
                 "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (str(rows),))


def exists(conn: psycopg.Connection) -> bool:
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (INDEX,)).fetchone()
    return bool(row and row[0])


def outgrown(conn: psycopg.Connection) -> bool:
    """Whether the table has grown :data:`GROWTH` times past the rows the index was built
    from (one round trip, made after every write with vectors; a missing index is left to
    whoever dropped it)."""
    row = conn.execute(
        "SELECT to_regclass(%s) IS NOT NULL, "
        "(SELECT value FROM loomctx_meta WHERE key = 'vector_index_rows'), "
        "(SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s))", (INDEX, TABLE)).fetchone()
    if row is None or not row[0] or row[1] is None or row[2] is None:
        return False
    built, now = int(row[1]), float(row[2])
    return now >= MIN_REBUILD_ROWS and now >= GROWTH * max(built, 1)


__all__ = ["GROWTH", "INDEX", "MIN_REBUILD_ROWS", "PROBES", "ROWS_PER_LIST", "QueryVector",
           "build", "drop",
           "exists", "lists_for", "order_sql", "outgrown", "search_settings"]
