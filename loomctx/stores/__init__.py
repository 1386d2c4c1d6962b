"""Memory stores: where remembered items live (:class:`MemoryStore` and its backends).

:class:`~loomctx.stores.postgres.PostgresStore` needs the ``postgres`` extra, so it is imported
from :mod:`loomctx.stores.postgres` (or opened by URL with :func:`open_store`), not from here.
"""

from loomctx.stores.memory import InMemoryStore
from loomctx.stores.migrate import reembed
from loomctx.stores.protocol import Hit, Level, MemoryRecord, MemoryStore, Scope
from loomctx.stores.sqlite import SQLiteStore
from loomctx.stores.urls import open_store

__all__ = [
    "Hit", "InMemoryStore", "Level", "MemoryRecord", "MemoryStore", "SQLiteStore", "Scope",
    "open_store", "reembed",
]
