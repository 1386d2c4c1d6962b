"""The demo's tools: ``list_tables``, ``describe_table`` and a read-only ``run_sql``.

Plain methods with type hints and docstrings, so an agent can derive each tool's JSON schema
from its signature; :data:`TOOL_SCHEMAS` are the same schemas written out. Every failure comes
back as readable text starting with ``error:`` (the model reads it and tries again), never as an
exception. ``run_sql`` runs a single SELECT or WITH statement in the sandbox of
:mod:`loomctx.demo.sandbox` (read-only, an allow-list of actions and functions, limits on
steps, seconds and value size), and returns at most ``max_rows`` rows and ``max_chars``
characters: a tool result is read back into the model's context, so its size is bounded too.
"""

from __future__ import annotations

import functools
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loomctx.demo.sales import TABLES
from loomctx.demo.sandbox import Guard, Limits, connect, split_statements
from loomctx.errors import ConfigError, ToolError

MAX_ROWS = 50
MAX_CHARS = 20_000
"""Most characters of one ``run_sql`` answer (a tool result goes back into the context)."""
MAX_CELL_CHARS = 500
"""Most characters shown of one value; a longer one is cut with a note of its length."""
MAX_STEPS = Limits().max_steps
"""SQLite VM steps a query may take before it is stopped (a runaway cross join)."""
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

    def __init__(self, path: str | os.PathLike[str], *, max_rows: int = MAX_ROWS,
                 max_chars: int = MAX_CHARS, limits: Limits | None = None) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise ConfigError(f"no database at {str(self.path)!r}: create one with "
                              "loomctx.demo.create_database(path)")
        if max_rows < 1:
            raise ConfigError(f"max_rows must be >= 1, got {max_rows!r}")
        if max_chars < 100:
            raise ConfigError(f"max_chars must be >= 100, got {max_chars!r}")
        self.max_rows, self.max_chars = max_rows, max_chars
        self.limits = limits if limits is not None else Limits()

    def _connect(self) -> sqlite3.Connection:
        return connect(self.path, self.limits)[0]

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
        if len(query) > self.limits.max_sql_chars:
            return (f"error: the query is {len(query)} characters; the limit is "
                    f"{self.limits.max_sql_chars}")
        statements = split_statements(query)
        first = statements[0].split(None, 1)[0].upper() if statements else ""
        if first not in ("SELECT", "WITH"):
            return f"error: only a single SELECT or WITH statement is allowed, got {first!r}"
        if len(statements) > 1:
            return "error: only a single statement is allowed (remove the extra ';')"
        conn, guard = connect(self.path, self.limits)
        try:
            with _closing(conn):
                cur = conn.execute(statements[0])
                cols = [d[0] for d in cur.description or ()]
                lines, size, rows, cut = [" | ".join(cols)], 0, 0, ""
                for row in iter(cur.fetchone, None):
                    if rows == self.max_rows:
                        cut = (f"... (more than {self.max_rows} rows: add a LIMIT or "
                               "aggregate)")
                        break
                    line = " | ".join(_cell(v) for v in row)
                    size += len(line) + 1
                    if size > self.max_chars:
                        cut = (f"... (cut after {rows} rows: the answer is limited to "
                               f"{self.max_chars} characters; select fewer or shorter columns)")
                        break
                    lines.append(line)
                    rows += 1
        except sqlite3.Error as exc:
            return f"error: {self._why(exc, guard)}"
        if cut:
            lines.append(cut)
        elif not rows:
            lines.append("(no rows)")
        return "\n".join(lines)

    def _why(self, exc: sqlite3.Error, guard: Guard) -> str:
        msg = str(exc)
        if guard.stopped:
            return f"query stopped after {guard.stopped}: add a WHERE or a LIMIT"
        if guard.denied and "not authorized" in msg:
            return (f"{guard.denied} is not allowed: run_sql may only read tables and call "
                    "the built-in scalar, aggregate, window, date, math and JSON functions")
        if "too big" in msg:
            return (f"a value is larger than the limit of {self.limits.max_value_bytes} bytes "
                    "(string or blob too big): select a part of it (substr) or its length")
        if isinstance(exc, sqlite3.ProgrammingError) and "one statement" in msg:
            return "only a single statement is allowed (remove the extra ';')"
        return msg

    def tools(self, *, on_result: OnResult | None = None) -> list[Callable[..., str]]:
        """The three tools for an agent, in :data:`TOOL_SCHEMAS` order.

        Each has its method's name, signature and docstring (the agent derives its schema
        from them), raises :class:`~loomctx.errors.ToolError` where the method returns
        ``error: ...``, and first hands ``(name, arguments, result text)`` to ``on_result``:
        a CLI shows each result as the agent runs.
        """
        return [_for_agent(fn, on_result) for fn in self._methods()]

    def _methods(self) -> list[Callable[..., str]]:
        return [self.list_tables, self.describe_table, self.run_sql]

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        """Run the tool ``name`` with ``arguments`` (a model's tool call), as text."""
        fn = {f.__name__: f for f in self._methods()}.get(name)
        if fn is None:
            return f"error: unknown tool {name!r}"
        try:
            return fn(**arguments)
        except TypeError as exc:
            return f"error: bad arguments for {name}: {exc}"


OnResult = Callable[[str, dict[str, Any], str], None]
"""Called with a tool's name, its arguments and its result text, each time it runs."""


def _for_agent(fn: Callable[..., str], on_result: OnResult | None) -> Callable[..., str]:
    @functools.wraps(fn)
    def tool(**arguments: Any) -> str:
        out = fn(**arguments)
        if on_result is not None:
            on_result(fn.__name__, arguments, out)
        if out.startswith("error:"):
            raise ToolError(out[len("error:"):].strip())
        return out

    return tool


def _cell(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.2f}"
    if isinstance(v, bytes):
        return f"<blob of {len(v)} bytes>"
    text = "NULL" if v is None else str(v)
    if len(text) > MAX_CELL_CHARS:
        return f"{text[:MAX_CELL_CHARS]}… ({len(text)} characters)"
    return text


class _closing:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        return self.conn

    def __exit__(self, *exc: object) -> None:
        self.conn.close()


__all__ = ["MAX_CHARS", "MAX_ROWS", "TOOL_SCHEMAS", "SalesTools"]
