"""CachedEmbedder never embeds the same text twice: in process, and through a store's cache."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pytest

from loomctx.embed import CachedEmbedder, Embedder, HashingEmbedder, text_hash
from loomctx.embed.cache import worth_storing
from loomctx.errors import ConfigError, StoreError


class SpyEmbedder:
    """Wraps an embedder and records every batch it is asked to embed."""

    def __init__(self) -> None:
        self._inner = HashingEmbedder(16)
        self.name = self._inner.name
        self.dim = self._inner.dim
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return self._inner.embed(texts)


class DictStore:
    """A store exposing only the two embedding-cache methods, backed by a dict."""

    def __init__(self) -> None:
        self.data: dict[tuple[str, str, str], np.ndarray] = {}
        self.fail = False

    def cached_vectors(
        self, model: str, hashes: Sequence[str], *, tenant: str
    ) -> dict[str, np.ndarray]:
        if self.fail:
            raise StoreError("disk gone")
        return {h: self.data[(tenant, model, h)] for h in hashes if (tenant, model, h) in self.data}

    def cache_vectors(self, model: str, vectors: Mapping[str, np.ndarray], *, tenant: str) -> None:
        if self.fail:
            raise StoreError("disk gone")
        for h, v in vectors.items():
            self.data[(tenant, model, h)] = np.array(v)


def test_is_an_embedder_with_the_inner_identity() -> None:
    spy = SpyEmbedder()
    cached = CachedEmbedder(spy)
    assert isinstance(cached, Embedder)
    assert (cached.name, cached.dim) == (spy.name, spy.dim)
    assert cached.embed([]).shape == (0, 16)
    assert spy.calls == []


def test_only_misses_reach_the_inner_embedder_in_one_ordered_batch() -> None:
    spy = SpyEmbedder()
    cached = CachedEmbedder(spy)
    first = cached.embed(["a", "b", "a"])
    assert spy.calls == [["a", "b"]]
    second = cached.embed(["c", "b", "d", "a"])
    assert spy.calls == [["a", "b"], ["c", "d"]]
    assert np.array_equal(second[1], first[1]) and np.array_equal(second[3], first[0])
    assert np.array_equal(second, spy._inner.embed(["c", "b", "d", "a"]))
    assert (cached.hits, cached.misses) == (3, 4)


def test_lru_evicts_the_least_recently_used() -> None:
    spy = SpyEmbedder()
    cached = CachedEmbedder(spy, maxsize=2)
    cached.embed(["a", "b"])
    cached.embed(["a"])  # a is now the most recent
    cached.embed(["c"])  # evicts b
    cached.embed(["a", "b"])
    assert spy.calls == [["a", "b"], ["c"], ["b"]]


def test_store_cache_survives_a_restart() -> None:
    store = DictStore()
    spy = SpyEmbedder()
    before = CachedEmbedder(spy, store=store).embed(["hello", "world"])
    assert set(store.data) == {
        ("default", spy.name, text_hash("hello")), ("default", spy.name, text_hash("world"))
    }
    restarted = CachedEmbedder(spy, store=store)  # a new process: empty in-process memo
    after = restarted.embed(["world", "new", "hello"])
    assert spy.calls == [["hello", "world"], ["new"]]
    assert np.array_equal(after[0], before[1]) and np.array_equal(after[2], before[0])
    assert (restarted.hits, restarted.misses) == (2, 1)


def test_store_entries_of_the_wrong_shape_are_recomputed() -> None:
    store = DictStore()
    spy = SpyEmbedder()
    store.data[("default", spy.name, text_hash("bad"))] = np.ones(3)
    vec = CachedEmbedder(spy, store=store).embed(["bad"])
    assert spy.calls == [["bad"]]
    assert vec.shape == (1, 16)


def test_a_failing_store_degrades_to_embedding() -> None:
    store = DictStore()
    store.fail = True
    spy = SpyEmbedder()
    cached = CachedEmbedder(spy, store=store)
    assert cached.embed(["x"]).shape == (1, 16)
    assert cached.embed(["x"]).shape == (1, 16)
    assert spy.calls == [["x"]]


def test_text_hash_is_exact_sha1() -> None:
    assert text_hash("abc") == "a9993e364706816aba3e25717850c26c9cd0d89d"
    assert text_hash("a b") != text_hash("a  b")


def test_bad_maxsize_raises() -> None:
    with pytest.raises(ConfigError):
        CachedEmbedder(SpyEmbedder(), maxsize=-1)


def test_each_tenant_reads_only_its_own_store_cache() -> None:
    store = DictStore()
    spy = SpyEmbedder()
    CachedEmbedder(spy, store=store, tenant="acme").embed(["secret plan"])
    other = CachedEmbedder(spy, store=store, tenant="globex")
    other.embed(["secret plan"])  # not served from acme's entry: embedded again
    assert spy.calls == [["secret plan"], ["secret plan"]]
    assert (other.hits, other.misses) == (0, 1)
    assert {key[0] for key in store.data} == {"acme", "globex"}
    with pytest.raises(ConfigError, match="tenant"):
        CachedEmbedder(spy, store=store, tenant="")


class TwoStepSpy(SpyEmbedder):
    """A SpyEmbedder with ``embed_later``: records when each of its steps ran."""

    def __init__(self) -> None:
        super().__init__()
        self.steps: list[tuple[str, list[str]]] = []

    def embed_later(self, texts: Sequence[str]) -> Callable[[], np.ndarray]:
        self.steps.append(("first", list(texts)))

        def rest() -> np.ndarray:
            self.steps.append(("rest", list(texts)))
            return self._inner.embed(texts)

        return rest


def test_two_steps_look_up_now_and_embed_only_the_misses_later() -> None:
    store = DictStore()
    inner = TwoStepSpy()
    cached = CachedEmbedder(inner, store=store)
    cached.embed(["seen"])
    inner.steps.clear()
    rest = cached.embed_later(["seen", "new one", "seen", "new one"])
    assert inner.steps == [("first", ["new one"])]  # looked up now, the miss's first step too
    rows = rest()
    assert inner.steps[-1] == ("rest", ["new one"])
    assert (cached.hits, cached.misses) == (3, 2)  # "seen" twice from the memo, "new one" once
    assert np.array_equal(rows, HashingEmbedder(16).embed(["seen", "new one", "seen", "new one"]))
    assert len(store.data) == 2  # the new vector reached the store in the second step
    again = cached.embed_later(["new one"])
    assert len(inner.steps) == 2  # all cached: no inner step at all
    assert np.array_equal(again(), rows[1:2])


def test_two_steps_of_an_inner_embedder_without_them_defer_its_call() -> None:
    spy = SpyEmbedder()
    cached = CachedEmbedder(spy)
    rest = cached.embed_later(["a", "b"])
    assert spy.calls == []
    assert np.array_equal(rest(), cached.embed(["a", "b"]))
    assert spy.calls == [["a", "b"]]  # the second embed was served by the memo


def test_two_steps_take_what_the_store_holds_in_the_second() -> None:
    """The store is read in the second step (off the caller's thread): a text it holds is
    taken from it, and the inner pass does not run."""
    store = DictStore()
    CachedEmbedder(SpyEmbedder(), store=store).embed(["kept in the store"])
    inner = TwoStepSpy()
    cached = CachedEmbedder(inner, store=store)
    rest = cached.embed_later(["kept in the store"])
    assert store.data and inner.steps == [("first", ["kept in the store"])]
    rows = rest()
    assert inner.steps == [("first", ["kept in the store"])]  # no pass: the store had it
    assert np.array_equal(rows, HashingEmbedder(16).embed(["kept in the store"]))
    assert (cached.hits, cached.misses) == (1, 0)
    store.fail = True  # a failing store costs its vectors, not the call
    assert np.array_equal(cached.embed_later(["another"])(), HashingEmbedder(16).embed(["another"]))


def test_embed_reads_the_store_before_the_inner_embedder_does_any_work() -> None:
    """One-step ``embed`` (a reopened session's memories) runs no inner first step for what the
    store holds, and one plain inner call for the rest."""
    store = DictStore()
    CachedEmbedder(SpyEmbedder(), store=store).embed(["stored a", "stored b"])
    inner = TwoStepSpy()
    cached = CachedEmbedder(inner, store=store)
    rows = cached.embed(["stored a", "fresh", "stored b"])
    assert inner.steps == [] and inner.calls == [["fresh"]]
    assert np.array_equal(rows, HashingEmbedder(16).embed(["stored a", "fresh", "stored b"]))
    assert (cached.hits, cached.misses) == (2, 1)
    assert cached.embed(["stored b", "fresh"]).shape == (2, 16) and inner.calls == [["fresh"]]


def test_an_embedder_quicker_than_the_store_is_not_cached_in_a_sessions_store() -> None:
    """``store_vectors = False`` (the hashing embedder): a session memoises its vectors in
    process, never a store round trip (a look-up and a write each turn cost more than hashing
    the text); a store given by name is still used."""
    from loomctx.session import Session
    from loomctx.stores.memory import InMemoryStore

    store = InMemoryStore()
    assert not worth_storing(HashingEmbedder(16)) and worth_storing(SpyEmbedder())
    assert Session("s", store=store, embedder=HashingEmbedder(16)).embedder.store is None
    assert Session("t", store=store, embedder=SpyEmbedder()).embedder.store is store
    given = DictStore()
    CachedEmbedder(HashingEmbedder(16), store=given).embed(["one"])
    assert len(given.data) == 1
