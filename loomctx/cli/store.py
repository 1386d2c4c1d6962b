"""``loomctx store reembed``: move a store's vectors to another embedder, keeping every record.

``reembed STORE [--embedder NAME]`` computes every stored vector again with the named embedder
(the default: the one a ``Session`` uses when given none) and swaps them in one transaction, so a
store written under an older default opens with the new one (:mod:`loomctx.stores.migrate`).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loomctx.embed.default import EMBEDDER_NAMES
from loomctx.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np

    from loomctx.embed.protocol import Embedder


def add_store_parser(sub: Any) -> None:
    p = sub.add_parser("store", help="maintain a memory store (re-embed its vectors)")
    verbs = p.add_subparsers(dest="verb", required=True)
    v = verbs.add_parser("reembed", help="compute every stored vector again with an embedder, "
                                         "in one transaction")
    v.add_argument("store", help="the store: a SQLite file, or a URL (postgresql://..., "
                                 "sqlite:///path)")
    v.add_argument("--embedder", choices=EMBEDDER_NAMES, default="default",
                   help="the embedder the store's sessions will use (default: the default "
                        "embedder, USE joined by MiniLM on English)")
    v.set_defaults(func=run_reembed)


def _check_target(store: str) -> None:
    """Refuse what holds nothing to re-embed, before anything is opened or created."""
    if store.startswith(("postgresql://", "postgres://")):
        return
    if store.startswith("memory://") or store in ("sqlite://", "sqlite:///",
                                                  "sqlite:///:memory:"):
        raise ConfigError(f"store {store!r} is in memory and holds nothing between runs: pass "
                          "a SQLite file or a postgresql:// URL")
    if store.startswith("sqlite://"):  # read as open_store reads it
        path = Path(store.removeprefix("sqlite://").removeprefix("/"))
    elif "://" in store:
        return  # open_store names the unknown scheme
    else:
        path = Path(store)
    if not path.is_file():
        raise ConfigError(f"store {store!r}: no file at {str(path)!r}; pass an existing "
                          "SQLite store")


def run_reembed(args: argparse.Namespace) -> int:
    from loomctx.embed.default import named_embedder
    from loomctx.stores import open_store, reembed

    _check_target(args.store)
    embedder = named_embedder(args.embedder)
    store = open_store(args.store)
    try:
        start = time.perf_counter()
        changed = reembed(store, _Progress(embedder, start))
    finally:
        store.close()
    where = getattr(store, "where", None) or args.store  # a server's, without credentials
    print(f"re-embedded {changed} records of {where} with {embedder.name} "
          f"(dimension {embedder.dim}) in {time.perf_counter() - start:.1f} s")
    return 0


class _Progress:
    """The embedder, telling stderr how far a large store has come after each call."""

    def __init__(self, embedder: Embedder, start: float) -> None:
        self.embedder, self.start, self.done = embedder, start, 0
        self.name, self.dim = embedder.name, embedder.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self.embedder.embed(texts)
        self.done += len(texts)
        print(f"embedded {self.done} texts ({time.perf_counter() - self.start:.0f} s)",
              file=sys.stderr, flush=True)
        return vectors
