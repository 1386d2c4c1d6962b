"""Rows of the SQLite store: record ⇄ row conversion and the SQL pieces every query shares.

Kept apart from :mod:`loomctx.stores.sqlite` (the transactions and the public methods) so each
reads in one screen. Agent and session None are stored as ``""`` (see
:mod:`loomctx.stores._sqlite_schema`); these helpers are the only place that knows it.
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from loomctx.items import fingerprint
from loomctx.stores import _records as rec
from loomctx.stores._text import tokenize
from loomctx.stores.protocol import MemoryRecord, Scope

COLUMNS = (
    'tenant, agent, session, id, content, level, role, timestamp, importance, "group", seq, '
    "message, metadata"
)
"""The record columns, in the order :func:`to_record` reads them."""
ORDER = "timestamp, seq, id, agent, session"
"""The scan order (the protocol's), unique per tenant."""
CHUNK = 500
"""Values bound per ``IN (...)``: far below SQLite's limit on host parameters."""


def scope_filter(scope: Scope, level: str | None = None) -> tuple[list[str], list[Any]]:
    """SQL conditions (on alias ``r``) for the scope's records, and their arguments."""
    where, args = ["r.tenant = ?"], [scope.tenant]
    for name, value in (("agent", scope.agent), ("session", scope.session), ("level", level)):
        if value is not None:
            where.append(f"r.{name} = ?")
            args.append(value)
    return where, args


def where_sql(clauses: list[str]) -> str:
    return f"WHERE {' AND '.join(clauses)}" if clauses else ""


def id_in(chunk: list[str]) -> str:
    return f"r.id IN ({', '.join('?' * len(chunk))})"


def chunks(items: list[Any]) -> Iterator[list[Any]]:
    for start in range(0, len(items), CHUNK):
        yield items[start : start + CHUNK]


def stored_scope(r: MemoryRecord) -> tuple[str, str, str]:
    """(tenant, agent, session) as the table holds them: None is ''."""
    return (r.tenant, r.agent or "", r.session or "")


def existing_pks(conn: sqlite3.Connection, records: list[MemoryRecord]) -> list[int]:
    """The pks of stored records with the same identity as any of ``records``."""
    wanted: dict[str, set[tuple[str, str, str]]] = defaultdict(set)
    for r in records:
        tenant, agent, session = stored_scope(r)
        wanted[tenant].add((r.id, agent, session))
    pks: list[int] = []
    for tenant, keys in wanted.items():
        for chunk in chunks(sorted({k[0] for k in keys})):
            sql = ("SELECT pk, id, agent, session FROM records r "
                   f"WHERE r.tenant = ? AND {id_in(chunk)}")
            pks += [row[0] for row in conn.execute(sql, [tenant, *chunk]) if row[1:] in keys]
    return pks


def to_row(pk: int, r: MemoryRecord) -> tuple[Any, ...]:
    message = None if r.message is None else rec.to_json(r.message, "message", r.id)
    return (
        pk, *stored_scope(r), r.id, r.content, r.level, r.role, r.timestamp, r.importance,
        r.group, r.seq, message, rec.to_json(dict(r.metadata), "metadata", r.id),
        " ".join(tokenize(r.content)), fingerprint(r.content),
    )


def to_record(row: tuple[Any, ...]) -> MemoryRecord:
    return MemoryRecord(
        tenant=row[0], agent=row[1] or None, session=row[2] or None, id=row[3], content=row[4],
        level=row[5], role=row[6], timestamp=row[7], importance=row[8], group=row[9], seq=row[10],
        message=None if row[11] is None else json.loads(row[11]), metadata=json.loads(row[12]),
    )


def fetch(conn: sqlite3.Connection, pks: list[int]) -> dict[int, MemoryRecord]:
    """Records by ``pk``: the rows a search ranked (already restricted to a scope)."""
    out: dict[int, MemoryRecord] = {}
    for chunk in chunks(pks):
        marks = ", ".join("?" * len(chunk))
        for row in conn.execute(f"SELECT {COLUMNS}, pk FROM records WHERE pk IN ({marks})", chunk):
            out[row[-1]] = to_record(row)
    return out


def retokenize(conn: sqlite3.Connection) -> None:
    """Rebuild the terms index after the tokenizer changed (the update trigger re-indexes)."""
    rows = conn.execute("SELECT pk, content FROM records").fetchall()
    conn.executemany(
        "UPDATE records SET terms = ? WHERE pk = ?", [(" ".join(tokenize(c)), pk) for pk, c in rows]
    )


__all__ = [
    "CHUNK",
    "COLUMNS",
    "ORDER",
    "chunks",
    "existing_pks",
    "fetch",
    "id_in",
    "retokenize",
    "scope_filter",
    "stored_scope",
    "to_record",
    "to_row",
    "where_sql",
]
