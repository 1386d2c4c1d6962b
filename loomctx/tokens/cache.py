"""An LRU cache in front of any :class:`~loomctx.tokens.protocol.TokenCounter`.

An agent rebuilds its context before every LLM call, and most items (system prompt, tool
definitions, old turns) are unchanged between calls. Counting them again is wasted work, so
every counter the registry hands out is wrapped in :class:`CachedCounter`: an unchanged text is
counted once, and a batch only sends its misses to the inner counter, in one call.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence

from loomctx.errors import ConfigError
from loomctx.tokens.protocol import TokenCounter

_SHORT = 256
"""Strings up to this many characters are their own key; longer ones are keyed by a digest."""


def _key(text: str) -> str | tuple[int, bytes]:
    if len(text) <= _SHORT:
        return text
    data = text.encode("utf-8", "surrogatepass")
    return (len(text), hashlib.blake2b(data, digest_size=16).digest())


class CachedCounter:
    """A thread-safe LRU of ``text -> count`` around ``inner``; same name, same exactness.

    ``hits`` and ``misses`` count cache look-ups (one per text, duplicates in one batch counted
    as one miss then hits). Long texts are keyed by a 128-bit BLAKE2b digest plus length, so
    memory stays bounded by ``maxsize`` entries of small keys.
    """

    def __init__(self, inner: TokenCounter, *, maxsize: int = 65536) -> None:
        if not isinstance(maxsize, int) or maxsize < 1:
            raise ConfigError(f"maxsize must be an int >= 1, got {maxsize!r}")
        if isinstance(inner, CachedCounter):
            inner = inner.inner
        self.inner: TokenCounter = inner
        self.name: str = inner.name
        self.exact: bool = inner.exact
        self.maxsize = maxsize
        self.hits = 0
        self.misses = 0
        self._lru: OrderedDict[str | tuple[int, bytes], int] = OrderedDict()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"CachedCounter({self.inner!r}, maxsize={self.maxsize})"

    def __len__(self) -> int:
        return len(self._lru)

    def _get(self, key: str | tuple[int, bytes]) -> int | None:
        value = self._lru.get(key)
        if value is not None:
            self._lru.move_to_end(key)
        return value

    def _put(self, key: str | tuple[int, bytes], value: int) -> None:
        self._lru[key] = value
        self._lru.move_to_end(key)
        while len(self._lru) > self.maxsize:
            self._lru.popitem(last=False)

    def count(self, text: str) -> int:
        """Cached ``inner.count(text)``."""
        key = text if len(text) <= _SHORT else _key(text)
        lru = self._lru
        with self._lock:  # _get inlined: a build counts its candidates a thousand times over
            value = lru.get(key)
            if value is not None:
                lru.move_to_end(key)
                self.hits += 1
                return value
            self.misses += 1
        value = self.inner.count(text)
        with self._lock:
            self._put(key, value)
        return value

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Counts of ``texts``; only distinct misses go to ``inner.count_many``, in one call."""
        keys = [_key(t) for t in texts]
        out: list[int | None] = [None] * len(texts)
        todo: dict[str | tuple[int, bytes], int] = {}  # key -> index of its first occurrence
        with self._lock:
            for i, key in enumerate(keys):
                value = self._get(key)
                if value is not None:
                    out[i] = value
                    self.hits += 1
                elif key in todo:
                    self.hits += 1
                else:
                    todo[key] = i
                    self.misses += 1
        if todo:
            firsts = list(todo.values())
            counts = self.inner.count_many([texts[i] for i in firsts])
            fresh = dict(zip(todo, counts, strict=True))
            with self._lock:
                for key, value in fresh.items():
                    self._put(key, value)
            for i, key in enumerate(keys):
                if out[i] is None:
                    out[i] = fresh[key]
        return [int(v) for v in out]  # type: ignore[arg-type]

    def truncate(self, text: str, max_tokens: int) -> str:
        """``inner.truncate`` (not cached: cuts are rarer and depend on ``max_tokens``)."""
        return self.inner.truncate(text, max_tokens)

    def clear(self) -> None:
        """Drop every cached count and reset ``hits`` and ``misses``."""
        with self._lock:
            self._lru.clear()
            self.hits = 0
            self.misses = 0


__all__ = ["CachedCounter"]
