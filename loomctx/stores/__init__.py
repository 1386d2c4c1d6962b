"""Memory stores: where remembered items live (:class:`MemoryStore` and its backends)."""

from loomctx.stores.memory import InMemoryStore
from loomctx.stores.protocol import Hit, Level, MemoryRecord, MemoryStore, Scope
from loomctx.stores.sqlite import SQLiteStore

__all__ = [
    "Hit", "InMemoryStore", "Level", "MemoryRecord", "MemoryStore", "SQLiteStore", "Scope"
]
