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

Tenants: the index does not know them, so a tenant-wide search of one of ten tenants filtered
out ~9 of every 10 candidates it read (each a heap fetch), and its lists were the whole
table's. Every build also gives each tenant holding at least :data:`TENANT_MIN_ROWS` vectors
(and at most :data:`TENANT_MAX_SHARE` of them, up to :data:`TENANT_MAX_INDEXES` tenants, the
largest) a partial index of its own rows (``WHERE tenant = '…'``), with lists for its own
size, and leaves those rows out of the shared index. The planner takes a tenant's own index
for any search of that tenant (the store plans each search with its values,
``plan_cache_mode = force_custom_plan``), and every candidate it reads is the tenant's. At a
million memories in ten tenants a search of 256 took 16 ms instead of 84 ms, with recall@256
1.00 instead of 0.97, and building the ten took ~70 s instead of ~5 minutes for the shared
index. A tenant that crosses the line between builds stays in the shared index until the next.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
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
TENANT_MIN_ROWS = 10_000
"""Vectors from which a tenant gets an index of its own at the next build."""
TENANT_MAX_SHARE = 0.5
"""A tenant holding more than this share of the vectors is searched through the shared index
(its own would nearly duplicate it)."""
TENANT_MAX_INDEXES = 32
"""Tenants with an index of their own, at most (the largest ones): the planner weighs every
partial index of the table when it plans a search."""
_TENANT_PREFIX = f"{INDEX}_t"


def search_settings(probes: int = PROBES, *, local: bool = False) -> str:
    """The vector search settings, for a whole connection or (``local``) one transaction."""
    scope = "true" if local else "false"
    return (f"SELECT set_config('ivfflat.probes', '{int(probes)}', {scope}), "
            f"set_config('ivfflat.iterative_scan', 'relaxed_order', {scope}), "
            f"set_config('plan_cache_mode', 'force_custom_plan', {scope})")


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


def tenant_index(tenant: str) -> str:
    """The name of a tenant's own index (a digest: tenant names are arbitrary text)."""
    return _TENANT_PREFIX + hashlib.sha256(tenant.encode("utf-8")).hexdigest()[:20]


def tenant_indexes(conn: psycopg.Connection) -> list[str]:
    """The names of the tenants' own vector indexes there are now."""
    rows = conn.execute(
        "SELECT indexname FROM pg_indexes WHERE tablename = %s "
        "AND schemaname = ANY(current_schemas(false)) AND left(indexname, %s) = %s",
        (TABLE, len(_TENANT_PREFIX), _TENANT_PREFIX)).fetchall()
    return sorted(str(name) for (name,) in rows)


def drop(conn: psycopg.Connection) -> None:
    conn.execute(f"DROP INDEX IF EXISTS {INDEX}")
    conn.execute("DROP INDEX IF EXISTS loomctx_records_hnsw")
    for name in tenant_indexes(conn):
        conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(name)))


def _create(conn: psycopg.Connection, name: str, dims: int, rows: int,
            where: sql.Composable) -> None:
    create = (f"CREATE INDEX {{}} ON {TABLE} USING ivfflat ((embedding::halfvec({int(dims)})) "
              f"halfvec_cosine_ops) WITH (lists = {lists_for(rows)}){{}}")
    conn.execute(sql.SQL(create).format(sql.Identifier(name), where))


def large_tenants(conn: psycopg.Connection, rows: int) -> list[tuple[str, int]]:
    """The tenants that get an index of their own in a table of ``rows`` vectors, with their
    vector counts, largest first."""
    found = conn.execute(
        f"SELECT tenant, COUNT(*) FROM {TABLE} WHERE embedding IS NOT NULL GROUP BY tenant "
        "HAVING COUNT(*) >= %s AND COUNT(*) <= %s ORDER BY 2 DESC, 1 LIMIT %s",
        (TENANT_MIN_ROWS, TENANT_MAX_SHARE * rows, TENANT_MAX_INDEXES)).fetchall()
    return [(str(tenant), int(count)) for tenant, count in found]


def build(conn: psycopg.Connection, dims: int) -> None:
    """(Re)build the shared index and the tenants' own over the rows there are now, in the
    caller's transaction, and remember how many rows they were built from. The shared index
    leaves out the rows of the tenants that have their own (``tenant <> ALL(…)``, which the
    planner proves false for them): each vector is in one index, searched and updated once."""
    drop(conn)
    row = conn.execute(f"SELECT COUNT(*) FROM {TABLE} WHERE embedding IS NOT NULL").fetchone()
    rows = int(row[0]) if row else 0
    large = large_tenants(conn, rows)
    shared = sql.SQL("") if not large else sql.SQL(" WHERE tenant <> ALL({})").format(
        sql.Literal([tenant for tenant, _ in large]))
    _create(conn, INDEX, dims, rows - sum(count for _, count in large), shared)
    for tenant, count in large:
        _create(conn, tenant_index(tenant), dims, count,
                sql.SQL(" WHERE tenant = {}").format(sql.Literal(tenant)))
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


__all__ = ["GROWTH", "INDEX", "MIN_REBUILD_ROWS", "PROBES", "ROWS_PER_LIST",
           "TENANT_MAX_INDEXES", "TENANT_MAX_SHARE", "TENANT_MIN_ROWS", "QueryVector", "build",
           "drop", "exists", "large_tenants", "lists_for", "order_sql", "outgrown",
           "search_settings", "tenant_index", "tenant_indexes"]
