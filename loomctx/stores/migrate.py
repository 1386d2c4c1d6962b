"""``reembed``: move a store's vectors to another embedder, keeping every record.

Why: a store's vectors are only comparable with vectors of the embedder that wrote them, so a
store written under one embedder refuses another of a different dimension (the default moved
from USE, 512 dimensions, to the joint USE + MiniLM one, 896). Opening an old store with the old
embedder keeps it working; re-embedding it moves it to the new one without losing a record.
Each record's vector is computed again from its content, embedded as a session embeds what it
stores (:func:`~loomctx.text.decoration.index_text`), and the store swaps all of them in one
transaction. Records stored without a vector stay without one.

The command line does the same: ``loomctx store reembed STORE [--embedder NAME]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from loomctx.errors import ConfigError
from loomctx.stores._records import dimension_mismatch
from loomctx.text.decoration import index_text


class Embedder(Protocol):
    """What re-embedding needs of an :class:`~loomctx.embed.protocol.Embedder`.

    Spelled out here rather than imported: the embedders sit above the stores (their cache
    persists in one), so a store module importing ``loomctx.embed`` would make a cycle.
    """

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> Any: ...


def check_embedder(store: object, embedder: Embedder) -> None:
    """Refuse an embedder whose vectors ``store`` cannot hold: another dimension than the one
    its stored vectors have (a store that does not tell its ``dims`` is not checked).

    Checked when a session opens its memory, so a store left by another embedder fails there,
    naming the fix, instead of every build recalling nothing from memory."""
    stored = getattr(store, "dims", None)
    if isinstance(stored, int) and not isinstance(stored, bool) and stored != embedder.dim:
        raise ConfigError(dimension_mismatch(f"embedder {embedder.name}", embedder.dim, stored))


def reembed(store: object, embedder: Embedder) -> int:
    """Re-embed every vector ``store`` holds with ``embedder``; returns how many records changed.

    The store is one of loomctx's (in memory, SQLite, PostgreSQL) or any store with the same
    ``reembed(embed)`` method. Run it while no session writes to the store.
    """
    method = getattr(store, "reembed", None)
    if not callable(method):
        raise ConfigError(f"{type(store).__name__} cannot re-embed its vectors (it has no "
                          "reembed method); copy its records into a loomctx store with put()")
    embed = getattr(embedder, "embed", None)
    if not callable(embed):
        raise ConfigError(f"reembed() takes an embedder (an object with embed(texts)), "
                          f"got {embedder!r}")
    return int(method(lambda texts: embed([index_text(text) for text in texts])))


__all__ = ["check_embedder", "reembed"]
