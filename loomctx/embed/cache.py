"""Embed each distinct text once: an in-process LRU in front of an optional persistent cache.

Embedding is the slowest step of a build that uses vectors, and agents re-send the same texts
turn after turn (memory items, tool descriptions, skills). :class:`CachedEmbedder` keys vectors by
the sha1 of the exact text, looks them up in its own LRU, then in a store's persistent cache
(``MemoryStore.cached_vectors`` / ``cache_vectors``), and sends only what is still missing to the
wrapped embedder, in one batch, in order. So the same text is never embedded twice, also across
restarts when the store persists. The store's cache is partitioned by tenant: a cached embedder
reads and writes only its own tenant's entries, so one tenant cannot tell which texts another has
embedded.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import numpy as np

from loomctx.embed.protocol import Embedder, embed_later
from loomctx.errors import ConfigError, StoreError
from loomctx.stores.protocol import DEFAULT_TENANT, check_name

_log = logging.getLogger(__name__)


class VectorCache(Protocol):
    """The two :class:`~loomctx.stores.protocol.MemoryStore` methods the cache needs."""

    def cached_vectors(
        self, model: str, hashes: Sequence[str], *, tenant: str
    ) -> dict[str, np.ndarray]: ...

    def cache_vectors(
        self, model: str, vectors: Mapping[str, np.ndarray], *, tenant: str
    ) -> None: ...


def worth_storing(embedder: Embedder) -> bool:
    """Whether a session should keep ``embedder``'s vectors in its store's cache (see
    ``store_vectors`` in :class:`~loomctx.embed.protocol.Embedder`); a store given to
    :class:`CachedEmbedder` by name is used whatever this says."""
    return bool(getattr(embedder, "store_vectors", True))


def text_hash(text: str) -> str:
    """The cache key of ``text``: sha1 hex of its exact UTF-8 bytes (no folding)."""
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


class CachedEmbedder:
    """An :class:`Embedder` that memoises another one; same ``name`` and ``dim`` as the inner one.

    ``hits`` counts texts served without the inner embedder (from memory, the store, or an
    earlier copy in the same call); ``misses`` counts texts sent to it. A store that fails with
    :class:`StoreError` is logged and bypassed: embedding still succeeds. ``tenant`` names the
    partition of the store's cache this embedder uses; give each tenant its own embedder.
    """

    def __init__(
        self, inner: Embedder, *, store: VectorCache | None = None, maxsize: int = 100_000,
        tenant: str = DEFAULT_TENANT,
    ) -> None:
        if not isinstance(maxsize, int) or isinstance(maxsize, bool) or maxsize < 0:
            raise ConfigError(f"CachedEmbedder maxsize must be an int >= 0, got {maxsize!r}")
        check_name(tenant, "CachedEmbedder tenant", optional=False)
        self.inner = inner
        self.store = store
        self.tenant = tenant
        self.maxsize = maxsize
        self.name: str = inner.name
        self.dim: int = inner.dim
        self.hits = 0
        self.misses = 0
        self._memo: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._inner_lock = threading.Lock()  # look-ups need not wait for a long inner call

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for ``texts`` in order; only never-seen texts reach the inner embedder, and
        only after the store's look-up (a reopened session's memories are all in the store, and
        an inner first step done for them was thrown away: ~0.3 ms a text)."""
        return self._later(texts, eager=False)()

    def embed_later(self, texts: Sequence[str]) -> Callable[[], np.ndarray]:
        """:meth:`embed` in two steps: the in-process look-up and the inner embedder's own first
        step (when it has two) now; the store's look-up (which may be a network round trip) and
        the inner pass in the returned function, on any thread. Texts the store turns out to
        hold are taken from it, and the rest embedded in one call, the first step done again
        (rare for what this is for, a new question: the store holds what this process has not
        seen since it started)."""
        return self._later(texts, eager=True)

    def _later(self, texts: Sequence[str], *, eager: bool) -> Callable[[], np.ndarray]:
        keys = [text_hash(t) for t in texts]
        found: dict[str, np.ndarray] = {}
        missing: dict[str, str] = {}
        with self._lock:
            for key, text in zip(keys, texts, strict=True):
                if key in found or key in missing:
                    continue
                vec = self._memo.get(key)
                if vec is not None:
                    self._memo.move_to_end(key)
                    found[key] = vec
                else:
                    missing[key] = text
            if not missing:
                self.hits += len(keys)
                return lambda: self._rows(keys, found)
        inner_pass: Callable[[], np.ndarray] | None = None
        if eager:
            with self._inner_lock:  # the inner embedder sees one call at a time, as it always did
                inner_pass = embed_later(self.inner, list(missing.values()))

        def rest() -> np.ndarray:
            stored = self._read_store(list(missing)) if self.store is not None else {}
            todo = {key: text for key, text in missing.items() if key not in stored}
            computed: dict[str, np.ndarray] = {}
            if todo:
                with self._inner_lock:  # only what neither cache held reaches the inner pass
                    fresh = np.asarray(inner_pass() if inner_pass is not None and not stored
                                       else self.inner.embed(list(todo.values())),
                                       dtype=np.float32)
                if fresh.shape != (len(todo), self.dim):
                    raise ConfigError(
                        f"embedder {self.name!r} returned shape {fresh.shape!r} for "
                        f"{len(todo)} texts; expected ({len(todo)}, {self.dim})"
                    )
                computed = dict(zip(todo, fresh, strict=True))
            with self._lock:
                for key, vec in (*stored.items(), *computed.items()):
                    found[key] = vec
                    self._remember(key, vec)
                self.misses += len(computed)
                self.hits += len(keys) - len(computed)
                self._write_store(computed)
            return self._rows(keys, found)

        return rest

    def _rows(self, keys: list[str], found: dict[str, np.ndarray]) -> np.ndarray:
        out = np.empty((len(keys), self.dim), dtype=np.float32)
        for row, key in enumerate(keys):
            out[row] = found[key]
        return out

    def clear(self) -> None:
        """Forget the in-process memo (the store's cache is kept)."""
        with self._lock:
            self._memo.clear()

    def _remember(self, key: str, vec: np.ndarray) -> None:
        if self.maxsize == 0:
            return
        self._memo[key] = vec
        if len(self._memo) > self.maxsize:
            self._memo.popitem(last=False)

    def _read_store(self, keys: list[str]) -> dict[str, np.ndarray]:
        assert self.store is not None
        try:
            stored = self.store.cached_vectors(self.name, keys, tenant=self.tenant)
        except StoreError as exc:
            _log.warning("embedding cache read failed, embedding instead: %s", exc)
            return {}
        usable: dict[str, np.ndarray] = {}
        for key, vec in stored.items():
            arr = np.asarray(vec, dtype=np.float32).reshape(-1)
            if arr.shape == (self.dim,) and np.isfinite(arr).all():
                usable[key] = arr
        return usable

    def _write_store(self, vectors: dict[str, np.ndarray]) -> None:
        if self.store is None or not vectors:
            return
        try:
            self.store.cache_vectors(self.name, vectors, tenant=self.tenant)
        except StoreError as exc:
            _log.warning("embedding cache write failed, vectors kept in memory only: %s", exc)


__all__ = ["CachedEmbedder", "VectorCache", "text_hash"]
