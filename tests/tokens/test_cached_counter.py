"""CachedCounter: hit/miss accounting, one batch call for misses, LRU eviction."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loomctx.errors import ConfigError
from loomctx.tokens import BPECounter, CachedCounter, TokenCounter


class _Recording:
    """A counter that records every text it is asked to count."""

    name = "recording"
    exact = True

    def __init__(self) -> None:
        self.counted: list[str] = []
        self.batches = 0

    def count(self, text: str) -> int:
        self.counted.append(text)
        return len(text)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        self.batches += 1
        self.counted.extend(texts)
        return [len(t) for t in texts]

    def truncate(self, text: str, max_tokens: int) -> str:
        return text[:max_tokens]


def test_hits_and_misses_are_counted() -> None:
    inner = _Recording()
    cache = CachedCounter(inner)
    assert isinstance(cache, TokenCounter)
    assert cache.count("abc") == 3
    assert cache.count("abc") == 3
    assert (cache.hits, cache.misses) == (1, 1)
    assert inner.counted == ["abc"]


def test_count_many_sends_only_distinct_misses_in_one_batch() -> None:
    inner = _Recording()
    cache = CachedCounter(inner)
    cache.count("a")
    long = "x" * 1000
    assert cache.count_many(["a", "bb", long, "bb", "a"]) == [1, 2, 1000, 2, 1]
    assert inner.batches == 1
    assert inner.counted == ["a", "bb", long]
    assert (cache.hits, cache.misses) == (3, 3)
    assert cache.count_many(["a", "bb", long]) == [1, 2, 1000]
    assert inner.batches == 1
    assert cache.count_many([]) == []


def test_long_texts_are_keyed_by_content() -> None:
    inner = _Recording()
    cache = CachedCounter(inner)
    a = "y" * 500 + "a"
    b = "y" * 500 + "b"
    assert cache.count_many([a, b]) == [501, 501]
    assert cache.count(a + "") == 501
    assert inner.counted == [a, b]
    assert cache.count("\ud800" * 300) == 300  # surrogates hash without error


def test_lru_evicts_the_least_recently_used() -> None:
    inner = _Recording()
    cache = CachedCounter(inner, maxsize=2)
    cache.count("a")
    cache.count("b")
    cache.count("a")  # a is now most recent
    cache.count("c")  # evicts b
    assert len(cache) == 2
    cache.count("a")
    cache.count("b")
    assert inner.counted == ["a", "b", "c", "b"]


def test_wraps_name_exactness_and_truncate() -> None:
    cache = CachedCounter(BPECounter("cl100k_base"))
    assert cache.name == "cl100k_base"
    assert cache.exact is True
    assert cache.truncate("hello world again", 2) == "hello world"
    assert CachedCounter(cache).inner is cache.inner  # no double wrapping


def test_clear_and_bad_maxsize() -> None:
    cache = CachedCounter(_Recording())
    cache.count("a")
    cache.clear()
    assert (len(cache), cache.hits, cache.misses) == (0, 0, 0)
    with pytest.raises(ConfigError, match="maxsize"):
        CachedCounter(_Recording(), maxsize=0)


@settings(max_examples=100, deadline=None)
@given(
    batches=st.lists(
        st.lists(st.sampled_from(["a", "bb", "ccc", "z" * 300, ""]), max_size=8), max_size=6
    )
)
def test_an_unchanged_item_is_never_counted_twice(batches: list[list[str]]) -> None:
    inner = _Recording()
    cache = CachedCounter(inner)
    for batch in batches:
        assert cache.count_many(batch) == [len(t) for t in batch]
    assert len(inner.counted) == len(set(inner.counted))
    assert cache.hits + cache.misses == sum(len(b) for b in batches)
    assert cache.misses == len(set(inner.counted))
