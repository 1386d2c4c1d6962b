"""A memo bounded by what it holds, not by how many entries: for results keyed by whole texts.

``functools.lru_cache(maxsize=N)`` bounds entries, and an entry keyed by a text holds the text:
32,768 entries of 168 KB messages (a pasted log each) are 5 GB, so a long-running service grew
with every new long message it scored. :class:`WeightMemo` bounds the sum of its entries'
weights (what the caller says one costs, e.g. the key's characters plus the value's size) and
forgets the least recently used past it; an entry heavier than an eighth of the bound is
computed every time, never kept, so one text cannot flush the rest.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

V = TypeVar("V")


class WeightMemo(Generic[V]):
    """``compute(key)`` memoised within ``limit`` total ``weigh(key, value)`` (thread-safe)."""

    def __init__(self, compute: Callable[[str], V], weigh: Callable[[str, V], int], *,
                 limit: int) -> None:
        self._compute, self._weigh, self.limit = compute, weigh, limit
        self._entries: OrderedDict[str, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()
        self.weight = 0
        """The summed weight of the entries held now (at most ``limit``)."""

    def __len__(self) -> int:
        return len(self._entries)

    def __call__(self, key: str) -> V:
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
                return hit[0]
        value = self._compute(key)
        weight = self._weigh(key, value)
        if weight * 8 > self.limit:
            return value
        with self._lock:
            if key not in self._entries:
                self._entries[key] = (value, weight)
                self.weight += weight
                while self.weight > self.limit:
                    self.weight -= self._entries.popitem(last=False)[1][1]
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.weight = 0


__all__ = ["WeightMemo"]
