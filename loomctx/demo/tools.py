"""The demo's tools: ``list_tables``, ``describe_table`` and a read-only ``run_sql``.

Plain methods with type hints and docstrings, so an agent can derive each tool's JSON schema
from its signature; :data:`TOOL_SCHEMAS` are the same schemas written out. Every failure comes
back as readable text starting with ``error:`` (the model reads it and tries again), never as an
exception. ``run_sql`` opens the database read-only (``mode=ro``, ``query_only``), accepts a
single SELECT or WITH statement, stops after :data:`MAX_STEPS` virtual-machine steps, and
returns at most ``max_rows`` rows.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loomctx.demo.sales import TABLES
from loomctx.errors import ConfigError

MAX_ROWS = 50
MAX_STEPS = 5_000_000
"""SQLite VM steps a query may take before it is stopped (a runaway cross join)."""
_COMMENTS = re.compile(r"--[^\n]*|/\*.*?\*/", re.S)
_DESCRIPTIONS = {t.name: t.description for t in TABLES}


def _schema(name: str, description: str, params: dict[str, Any] | None = None,
            ) -> dict[str, Any]:
    props = params or {}
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": props, "required": sorted(props)}}}


TOOL_SCHEMAS: tuple[dict[str, Any], ...] = (
    _schema("list_tables", "List the tables of the sales database with their row counts."),
    _schema("describe_table", "Show one table's columns, their types and meaning.",
            {"name": {"type": "string", "description": "table name, e.g. 'orders'"}}),
    _schema("run_sql", "Run one read-only SQLite SELECT (or WITH) query; returns the rows.",
            {"query": {"type": "string", "description": "a single SELECT or WITH statement"}}),
)
"""OpenAI-style function schemas of the three tools."""


class SalesTools:
    """The tools over one demo database file (see :func:`loomctx.demo.sales.create_database`)."""

    def __init__(self, path: str | os.PathLike[str], *, max_rows: int = MAX_ROWS) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise ConfigError(f"no database at {str(self.path)!r}: create one with "
                              "loomctx.demo.create_database(path)")
        if max_rows < 1:
            raise ConfigError(f"max_rows must be >= 1, got {max_rows!r}")
        self.max_rows = max_rows

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)
        conn.execute("PRAGMA query_only = ON")
        steps = 0

        def stop() -> int:
            nonlocal steps
            steps += 1000
            return int(steps > MAX_STEPS)

        conn.set_progress_handler(stop, 1000)
        return conn

    def list_tables(self) -> str:
        """List the tables of the sales database with their row counts and what they hold."""
        with _closing(self._connect()) as conn:
            names = [r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
            lines = []
            for n in names:
                count = conn.execute(f'SELECT COUNT(*) FROM "{n}"').fetchone()[0]
                lines.append(f"{n} ({count} rows): {_DESCRIPTIONS.get(n, '')}".rstrip(": "))
        return "\n".join(lines)

    def describe_table(self, name: str) -> str:
        """Show one table's columns with their types and meaning.

        Args:
            name: The table name, e.g. "orders".
        """
        for t in TABLES:
            if t.name == name.strip().lower():
                return t.document()
        known = ", ".join(sorted(t.name for t in TABLES))
        return f"error: no such table: {name!r} (tables: {known})"

    def run_sql(self, query: str) -> str:
        """Run one read-only SQLite SELECT (or WITH) statement and return the rows as text.

        Args:
            query: A single SELECT or WITH statement.
        """
        sql = _COMMENTS.sub(" ", query).strip().rstrip(";").strip()
        first = sql.split(None, 1)[0].upper() if sql else ""
        if first not in ("SELECT", "WITH"):
            return f"error: only a single SELECT or WITH statement is allowed, got {first!r}"
        if not sqlite3.complete_statement(sql + ";") or _more_than_one(sql):
            return "error: only a single statement is allowed (remove the extra ';')"
        try:
            with _closing(self._connect()) as conn:
                cur = conn.execute(sql)
                rows = cur.fetchmany(self.max_rows + 1)
                cols = [d[0] for d in cur.description or ()]
        except sqlite3.Error as exc:
            msg = str(exc)
            if msg == "interrupted":
                msg = f"query stopped after {MAX_STEPS} steps: add a WHERE or a LIMIT"
            return f"error: {msg}"
        more = len(rows) > self.max_rows
        lines = [" | ".join(cols), *(" | ".join(_cell(v) for v in r)
                                     for r in rows[: self.max_rows])]
        if more:
            lines.append(f"... (more than {self.max_rows} rows: add a LIMIT or aggregate)")
        elif not rows:
            lines.append("(no rows)")
        return "\n".join(lines)

    def tools(self) -> list[Callable[..., str]]:
        """The three tools as bound methods, in :data:`TOOL_SCHEMAS` order."""
        return [self.list_tables, self.describe_table, self.run_sql]

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        """Run the tool ``name`` with ``arguments`` (a model's tool call), as text."""
        fn = {f.__name__: f for f in self.tools()}.get(name)
        if fn is None:
            return f"error: unknown tool {name!r}"
        try:
            return fn(**arguments)
        except TypeError as exc:
            return f"error: bad arguments for {name}: {exc}"


def _more_than_one(sql: str) -> bool:
    """Whether a ';' outside string literals separates statements."""
    quote = ""
    for ch in sql:
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"`":
            quote = ch
        elif ch == ";":
            return True
    return False


def _cell(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.2f}"
    return "NULL" if v is None else str(v)


class _closing:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        return self.conn

    def __exit__(self, *exc: object) -> None:
        self.conn.close()


__all__ = ["MAX_ROWS", "TOOL_SCHEMAS", "SalesTools"]
