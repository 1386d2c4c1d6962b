"""The read-only SQLite sandbox ``run_sql`` queries run in.

A model writes the SQL, so the query is hostile input. The sandbox holds on four things, each
enforced by SQLite itself rather than by reading the query:

- an **allow-list authorizer**: a statement may only SELECT, read columns, recurse in a
  ``WITH RECURSIVE`` and call the functions of :data:`FUNCTIONS` (plain scalar, aggregate,
  window, date, math and JSON functions). Everything else is refused when the statement is
  prepared: writes, ``ATTACH``, pragmas (``pragma_table_info`` too), ``load_extension``, and
  functions that hand out native pointers or register things such as ``fts3_tokenizer``. An
  allow-list, so a function a newer SQLite adds is refused until it is listed;
- a read-only connection (``mode=ro`` and ``PRAGMA query_only``);
- limits: the longest string or blob a query may make (``SQLITE_LIMIT_LENGTH``, so
  ``randomblob(10000000)`` fails at once; Python 3.11+, before which ``randomblob`` and
  ``zeroblob`` are refused instead), the longest query, and a progress
  handler that stops a query after a number of virtual-machine steps or seconds, whichever
  comes first;
- one statement: :func:`split_statements` reads quotes (``'…'``, ``"…"``, ```…```, ``[…]``)
  and comments the way SQLite's tokenizer does, and SQLite refuses a second statement again
  should the two ever disagree.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from loomctx.errors import ConfigError

FUNCTIONS = frozenset({
    # core scalar functions
    "abs", "char", "coalesce", "format", "glob", "hex", "ifnull", "iif", "instr", "length",
    "like", "likelihood", "likely", "lower", "ltrim", "max", "min", "nullif", "printf", "quote",
    "random", "randomblob", "replace", "round", "rtrim", "sign", "soundex", "substr",
    "substring", "trim", "typeof", "unicode", "unlikely", "upper", "zeroblob",
    "sqlite_version",
    # aggregates and window functions
    "avg", "count", "group_concat", "sum", "total", "cume_dist", "dense_rank", "first_value",
    "lag", "last_value", "lead", "nth_value", "ntile", "percent_rank", "rank", "row_number",
    # date and time
    "current_date", "current_time", "current_timestamp", "date", "datetime", "julianday",
    "strftime", "time", "unixepoch",
    # math
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "ceil", "ceiling", "cos",
    "cosh", "degrees", "exp", "floor", "ln", "log", "log10", "log2", "mod", "pi", "pow",
    "power", "radians", "sin", "sinh", "sqrt", "tan", "tanh", "trunc",
    # JSON
    "->", "->>", "json", "json_array", "json_array_length", "json_extract", "json_group_array",
    "json_group_object", "json_insert", "json_object", "json_patch", "json_quote",
    "json_remove", "json_replace", "json_set", "json_type", "json_valid",
})
"""Functions a query may call; any other (``fts3_tokenizer``, ``load_extension``,
``sqlite_log``, the FTS and R-tree helpers, …) is refused."""

_HAS_LIMITS = hasattr(sqlite3.Connection, "setlimit")  # Python 3.11+
_BLOB_MAKERS = frozenset({"randomblob", "zeroblob"})
"""Refused where the value-size limit cannot be set: they would allocate what they are asked."""
_LIMIT_LENGTH, _LIMIT_SQL_LENGTH, _LIMIT_ATTACHED = 0, 1, 7  # sqlite3.h's SQLITE_LIMIT_*
_ALLOWED_ACTIONS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ,
                              sqlite3.SQLITE_RECURSIVE})
_ACTIONS = ("CREATE_INDEX", "CREATE_TABLE", "CREATE_TEMP_INDEX", "CREATE_TEMP_TABLE",
            "CREATE_TEMP_TRIGGER", "CREATE_TEMP_VIEW", "CREATE_TRIGGER", "CREATE_VIEW", "DELETE",
            "DROP_INDEX", "DROP_TABLE", "DROP_TEMP_INDEX", "DROP_TEMP_TABLE", "DROP_TEMP_TRIGGER",
            "DROP_TEMP_VIEW", "DROP_TRIGGER", "DROP_VIEW", "INSERT", "PRAGMA", "READ", "SELECT",
            "TRANSACTION", "UPDATE", "ATTACH", "DETACH", "ALTER_TABLE", "REINDEX", "ANALYZE",
            "CREATE_VTABLE", "DROP_VTABLE", "FUNCTION", "SAVEPOINT", "RECURSIVE")
_ACTION_NAMES = {getattr(sqlite3, f"SQLITE_{a}"): a.replace("_", " ") for a in _ACTIONS
                 if hasattr(sqlite3, f"SQLITE_{a}")}


@dataclass(frozen=True, kw_only=True)
class Limits:
    """What one query may spend; over any of them it stops with an error the model reads."""

    max_steps: int = 5_000_000
    """SQLite virtual-machine steps (a runaway cross join)."""
    max_seconds: float = 5.0
    """Wall-clock seconds."""
    max_value_bytes: int = 1_000_000
    """Longest string or blob a query may make (``randomblob(10**7)`` fails at once)."""
    max_sql_chars: int = 100_000
    """Longest query text."""

    def __post_init__(self) -> None:
        for name in ("max_steps", "max_value_bytes", "max_sql_chars"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1000:
                raise ConfigError(f"{name} must be an int >= 1000, got {v!r}")
        v = self.max_seconds
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
            raise ConfigError(f"max_seconds must be > 0, got {v!r}")


class Guard:
    """The authorizer and progress handler of one connection; afterwards, why its query was
    refused (``denied``) or stopped (``stopped``)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.denied = self.stopped = ""
        self._steps = 0
        self._deadline = time.monotonic() + limits.max_seconds

    def authorize(self, action: int, arg1: str | None, arg2: str | None, _db: str | None,
                  _source: str | None) -> int:
        if action in _ALLOWED_ACTIONS:
            return sqlite3.SQLITE_OK
        name = (arg2 or "").lower()
        if action == sqlite3.SQLITE_FUNCTION and name in FUNCTIONS and (
                _HAS_LIMITS or name not in _BLOB_MAKERS):
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_PRAGMA or (arg1 or "").lower() == "sqlite_master":
            # a pragma table (pragma_table_info) first writes the schema of its virtual table
            self.denied = self.denied or "a pragma"
        elif not self.denied:
            if action == sqlite3.SQLITE_FUNCTION:
                self.denied = f"the function {arg2}()"
            else:
                what = _ACTION_NAMES.get(action, f"action {action}")
                self.denied = " ".join(x for x in (what, arg1, arg2) if x)
        return sqlite3.SQLITE_DENY

    def progress(self) -> int:
        self._steps += 1000
        if self._steps > self.limits.max_steps:
            self.stopped = f"{self.limits.max_steps} steps"
        elif time.monotonic() > self._deadline:
            self.stopped = f"{self.limits.max_seconds:g} seconds"
        return int(bool(self.stopped))


def connect(path: Path, limits: Limits) -> tuple[sqlite3.Connection, Guard]:
    """A read-only connection to ``path`` inside the sandbox, and the guard that watches it."""
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    conn.execute("PRAGMA query_only = ON")
    conn.execute("PRAGMA cache_size = -8192")  # at most 8 MiB of pages; sorts spill to disk
    setlimit = getattr(conn, "setlimit", None)  # Python 3.11+; before, the other limits hold
    if setlimit is not None:
        setlimit(_LIMIT_LENGTH, limits.max_value_bytes)
        setlimit(_LIMIT_SQL_LENGTH, limits.max_sql_chars)
        setlimit(_LIMIT_ATTACHED, 0)
    guard = Guard(limits)
    conn.set_authorizer(guard.authorize)
    conn.set_progress_handler(guard.progress, 1000)
    return conn, guard


def split_statements(sql: str) -> list[str]:
    """The statements of ``sql``, comments blanked out, empty ones dropped.

    A ``;`` ends a statement only outside string literals (``'…'``), quoted identifiers
    (``"…"``, ```…```, ``[…]``) and comments (``--`` to the line's end, ``/* … */``), as in
    SQLite's tokenizer; a doubled quote inside a literal is an escaped quote.
    """
    statements: list[str] = []
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in "'\"`[":
            close = "]" if ch == "[" else ch
            j = sql.find(close, i + 1)
            while j != -1 and close != "]" and sql[j + 1:j + 2] == close:
                j = sql.find(close, j + 2)  # a doubled quote is one quote character
            j = n - 1 if j == -1 else j
            out.append(sql[i:j + 1])
            i = j + 1
        elif sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j == -1 else j
            out.append(" ")
        elif sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            i = n if j == -1 else j + 2
            out.append(" ")
        elif ch == ";":
            statements.append("".join(out))
            out = []
            i += 1
        else:
            out.append(ch)
            i += 1
    statements.append("".join(out))
    return [s.strip() for s in statements if s.strip()]


__all__ = ["FUNCTIONS", "Guard", "Limits", "connect", "split_statements"]
