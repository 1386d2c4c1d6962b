"""``open_store``: a memory store from one configuration string.

Why a URL: moving from the embedded defaults to a shared server should be a configuration
change, not a code change, so every place that takes a store (``Session(store=...)``, the CLI)
also takes a string and hands it here.

- ``postgresql://…`` or ``postgres://…`` → :class:`~loomctx.stores.postgres.PostgresStore`
  (needs the ``postgres`` extra);
- ``sqlite:///relative/path``, ``sqlite:////absolute/path``, ``sqlite://`` (in memory) or a plain
  file path → :class:`~loomctx.stores.sqlite.SQLiteStore`;
- ``memory://`` → :class:`~loomctx.stores.memory.InMemoryStore`.
"""

from __future__ import annotations

import os

from loomctx.errors import ConfigError, MissingDependencyError
from loomctx.stores.memory import InMemoryStore
from loomctx.stores.protocol import MemoryStore
from loomctx.stores.sqlite import SQLiteStore

SCHEMES = ("postgresql://", "postgres://", "sqlite://", "memory://")
"""The URL schemes :func:`open_store` accepts (besides a plain file path)."""


def open_store(url: str | os.PathLike[str]) -> MemoryStore:
    """Open the store a URL (or a plain SQLite file path) names; the caller closes it."""
    if isinstance(url, os.PathLike):
        return SQLiteStore(url)
    if not isinstance(url, str) or not url.strip():
        raise ConfigError(f"a store URL must be a non-empty str, got {url!r}; "
                          f"use one of {', '.join(SCHEMES)} or a file path")
    if url.startswith(("postgresql://", "postgres://")):
        try:
            from loomctx.stores.postgres import PostgresStore
        except ImportError as e:
            raise MissingDependencyError("a PostgreSQL store", "postgres", "psycopg") from e
        return PostgresStore(url)
    if url.startswith("sqlite://"):
        path = url.removeprefix("sqlite://")
        if path in ("", "/", "/:memory:"):
            return SQLiteStore()
        return SQLiteStore(path.removeprefix("/"))
    if url.startswith("memory://"):
        if url != "memory://":
            raise ConfigError(f"memory:// takes nothing after the scheme, got {url!r}")
        return InMemoryStore()
    if "://" in url:
        scheme = url.split("://", 1)[0]
        raise ConfigError(f"unknown store URL scheme {scheme!r} in {url!r}; use one of "
                          f"{', '.join(SCHEMES)} or a plain SQLite file path")
    return SQLiteStore(url)


__all__ = ["SCHEMES", "open_store"]
