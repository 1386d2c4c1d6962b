"""One contract test class for every :class:`~loomctx.stores.protocol.MemoryStore` backend.

A backend's test module subclasses :class:`StoreConformance` and overrides the ``store`` fixture
(the pattern of haystack's document-store tests)::

    class TestMyStore(StoreConformance):
        @pytest.fixture
        def store(self):
            s = MyStore()
            yield s
            s.close()

Every behaviour the protocol docstring promises is asserted here, so a new backend (PostgreSQL,
a user's own) is correct exactly when this class passes. Needs pytest and hypothesis.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loomctx.errors import ConfigError, StoreError
from loomctx.stores.protocol import MemoryRecord, MemoryStore

DIM = 8


def unit(*values: float) -> np.ndarray:
    """A unit vector of dimension ``DIM`` from its first coordinates."""
    v = np.zeros(DIM, dtype=np.float32)
    v[: len(values)] = values
    return v / np.linalg.norm(v)


def rec(id: str, content: str = "", **fields: object) -> MemoryRecord:
    return MemoryRecord(id=id, content=content or f"text of {id}", **fields)  # type: ignore[arg-type]


FULL = MemoryRecord(
    id="msg-1",
    content="Call the weather tool for Paris 巴黎天气",
    level="L2",
    role="assistant",
    timestamp=1_700_000_000.25,
    session="s1",
    agent="planner",
    importance=0.75,
    group="call-7",
    seq=3,
    message={"role": "assistant", "tool_calls": [{"id": "c7", "arguments": '{"city": "Paris"}'}]},
    metadata={"origin": "chat", "tags": ["a", "b"], "n": 2, "nested": {"ok": True, "x": None}},
)


class StoreConformance:
    """Subclass and override ``store`` to run the whole MemoryStore contract on a backend."""

    @pytest.fixture
    def store(self) -> Iterator[MemoryStore]:
        raise NotImplementedError("override the `store` fixture with a fresh, empty store")

    # -- put / get ---------------------------------------------------------------------------

    def test_satisfies_protocol(self, store: MemoryStore) -> None:
        assert isinstance(store, MemoryStore)

    def test_round_trip_every_field(self, store: MemoryStore) -> None:
        store.put([FULL])
        assert store.get(["msg-1"]) == [FULL]

    def test_get_keeps_asked_order_and_skips_missing(self, store: MemoryStore) -> None:
        store.put([rec("a"), rec("b"), rec("c")])
        assert [r.id for r in store.get(["c", "nope", "a"])] == ["c", "a"]
        assert store.get([]) == []
        assert [r.id for r in store.get(["a", "a"])] == ["a"]
        with pytest.raises(ConfigError, match="list of ids"):
            store.get("a")

    def test_returned_dicts_are_copies(self, store: MemoryStore) -> None:
        meta = {"k": [1]}
        store.put([rec("a", metadata=meta)])
        meta["k"].append(2)
        got = store.get(["a"])[0]
        got.metadata["k"].append(3)  # type: ignore[index]
        assert store.get(["a"])[0].metadata == {"k": [1]}

    def test_put_same_id_replaces(self, store: MemoryStore) -> None:
        store.put([rec("a", "old apples text")], np.stack([unit(1)]))
        store.put([rec("a", "new pears text", level="L1")], np.stack([unit(0, 1)]))
        assert store.count() == 1
        assert store.get(["a"])[0].content == "new pears text"
        assert store.search_lexical("apples") == []
        assert [h.record.id for h in store.search_lexical("pears")] == ["a"]
        assert store.search_vector(unit(0, 1), limit=1)[0].score == pytest.approx(1.0, abs=1e-5)

    def test_replace_without_vector_drops_old_vector(self, store: MemoryStore) -> None:
        store.put([rec("a"), rec("b")], np.stack([unit(1), unit(0, 1)]))
        store.put([rec("a")])
        assert [h.record.id for h in store.search_vector(unit(1))] == ["b"]

    @pytest.mark.parametrize(
        "bad",
        [
            rec("bad", importance=float("nan")),
            rec("bad", level="L9"),  # type: ignore[arg-type]
            rec("", "empty id"),
            rec("bad", metadata={"x": object()}),
        ],
        ids=["nan-importance", "bad-level", "empty-id", "not-json"],
    )
    def test_failing_put_leaves_nothing(self, store: MemoryStore, bad: MemoryRecord) -> None:
        store.put([rec("keep", "original")])
        with pytest.raises(ConfigError):
            store.put([rec("keep", "changed"), rec("new"), bad])
        assert store.count() == 1
        assert store.get(["keep"])[0].content == "original"

    def test_duplicate_ids_in_one_put_name_the_id(self, store: MemoryStore) -> None:
        with pytest.raises(ConfigError, match="dup-7"):
            store.put([rec("dup-7"), rec("x"), rec("dup-7")])
        assert store.count() == 0

    @pytest.mark.parametrize(
        "vectors",
        [
            np.full((2, DIM), np.nan),
            np.full((2, DIM), np.inf),
            np.ones((3, DIM)),
            np.ones(DIM),
            np.zeros((2, DIM)),
        ],
        ids=["nan", "inf", "row-count", "1-d", "zero"],
    )
    def test_bad_vectors_rejected(self, store: MemoryStore, vectors: np.ndarray) -> None:
        with pytest.raises(ConfigError):
            store.put([rec("a"), rec("b")], vectors)
        assert store.count() == 0

    def test_wrong_dimension_rejected(self, store: MemoryStore) -> None:
        store.put([rec("a")], np.stack([unit(1)]))
        with pytest.raises(ConfigError, match="dimension"):
            store.put([rec("b")], np.ones((1, DIM + 1)))
        with pytest.raises(ConfigError, match="dimension"):
            store.search_vector(np.ones(DIM + 1))
        assert store.get(["b"]) == []

    def test_lone_surrogates_become_replacement_char(self, store: MemoryStore) -> None:
        store.put([rec("s", "bad \ud800 half", session="x\udfffy")])
        got = store.get(["s"])[0]
        assert got.content == "bad \ufffd half"
        assert got.session == "x\ufffdy"
        with pytest.raises(ConfigError):
            store.put([rec("id\ud800")])

    # -- delete / set_level / scan / count ----------------------------------------------------

    def test_delete(self, store: MemoryStore) -> None:
        vectors = np.stack([unit(1), unit(0, 1)])
        store.put([rec("a", "alpha words"), rec("b", "beta words")], vectors)
        assert store.delete(["a", "missing"]) == 1
        assert store.get(["a"]) == []
        assert [h.record.id for h in store.search_lexical("words")] == ["b"]
        assert [h.record.id for h in store.search_vector(unit(1))] == ["b"]
        assert store.delete([]) == 0

    def test_set_level(self, store: MemoryStore) -> None:
        store.put([rec("a"), rec("b")], np.stack([unit(1), unit(0, 1)]))
        store.set_level(["a", "missing"], "L2")
        assert store.get(["a"])[0].level == "L2"
        assert store.count(level="L2") == 1
        assert [h.record.id for h in store.search_vector(unit(0, 1), level="L2")] == ["a"]
        with pytest.raises(ConfigError):
            store.set_level(["a"], "L7")  # type: ignore[arg-type]

    def test_scan_filters_and_order(self, store: MemoryStore) -> None:
        store.put([
            rec("late", timestamp=20.0, session="s1"),
            rec("tie-2", timestamp=10.0, seq=2, session="s1", agent="x"),
            rec("tie-1", timestamp=10.0, seq=1, session="s1", level="L1"),
            rec("other", timestamp=5.0, session="s2", agent="x"),
        ])
        assert [r.id for r in store.scan()] == ["other", "tie-1", "tie-2", "late"]
        assert [r.id for r in store.scan(session="s1")] == ["tie-1", "tie-2", "late"]
        assert [r.id for r in store.scan(level="L1")] == ["tie-1"]
        assert [r.id for r in store.scan(agent="x")] == ["other", "tie-2"]
        assert [r.id for r in store.scan(session="s1", agent="x", level="L4")] == ["tie-2"]
        assert list(store.scan(session="none")) == []

    def test_count(self, store: MemoryStore) -> None:
        assert store.count() == 0
        store.put([rec("a", session="s1"), rec("b", session="s1", level="L1"), rec("c")])
        assert store.count() == 3
        assert store.count(session="s1") == 2
        assert store.count(session="s1", level="L1") == 1
        assert store.count(level="L3") == 0

    # -- lexical search ------------------------------------------------------------------------

    def test_lexical_english_ranks_relevant_first(self, store: MemoryStore) -> None:
        store.put([
            rec("weather", "The weather in Paris is sunny and the weather stays warm"),
            rec("paris", "Paris is the capital of France"),
            rec("other", "Unrelated note about databases"),
        ])
        hits = store.search_lexical("Paris weather")
        assert [h.record.id for h in hits] == ["weather", "paris"]
        assert hits[0].score > hits[1].score > 0

    def test_lexical_chinese(self, store: MemoryStore) -> None:
        store.put([
            rec("hike", "我喜欢在周末去爬山"),
            rec("food", "我喜欢吃饺子"),
            rec("en", "I like hiking"),
        ])
        assert store.search_lexical("爬山")[0].record.id == "hike"
        assert [h.record.id for h in store.search_lexical("饺子")] == ["food"]
        assert store.search_lexical("周末爬山")[0].record.id == "hike"

    def test_lexical_filters_and_limit(self, store: MemoryStore) -> None:
        store.put([
            rec(f"r{i}", f"shared keyword {i}", session=f"s{i % 2}", level="L1" if i < 3 else "L4")
            for i in range(8)
        ])
        assert len(store.search_lexical("keyword", limit=3)) == 3
        assert store.search_lexical("keyword", limit=0) == []
        assert {h.record.id for h in store.search_lexical("keyword", session="s1")} == {
            "r1", "r3", "r5", "r7"
        }
        assert {h.record.id for h in store.search_lexical("keyword", level="L1")} == {
            "r0", "r1", "r2"
        }
        assert {h.record.id for h in store.search_lexical("keyword", session="s0", level="L1")} == {
            "r0", "r2"
        }
        with pytest.raises(ConfigError):
            store.search_lexical("keyword", limit=-1)

    @pytest.mark.parametrize(
        "query", ['"', 'AND OR NOT "unbalanced', "NEAR(a b)", "col:value*", "^x", "", "   ", "(("]
    )
    def test_lexical_query_syntax_is_inert(self, store: MemoryStore, query: str) -> None:
        store.put([rec("a", "value of the column")])
        assert all(h.record.id == "a" for h in store.search_lexical(query))

    # -- vector search -------------------------------------------------------------------------

    def test_vector_orders_by_cosine(self, store: MemoryStore) -> None:
        vectors = np.stack([unit(1, 0), unit(1, 1), unit(0, 1), unit(-1, 0)])
        store.put([rec("x"), rec("xy"), rec("y"), rec("minus-x")], vectors)
        store.put([rec("no-vector")])
        hits = store.search_vector(unit(1, 0.1) * 7)  # not unit: the store normalises
        assert [h.record.id for h in hits] == ["x", "xy", "y", "minus-x"]
        expected = vectors @ unit(1, 0.1)
        assert [h.score for h in hits] == pytest.approx(sorted(expected, reverse=True), abs=1e-5)
        assert [h.record.id for h in store.search_vector(unit(0, 1), limit=2)] == ["y", "xy"]

    def test_vector_filters(self, store: MemoryStore) -> None:
        store.put(
            [rec("a", session="s1"), rec("b", session="s2", level="L2"), rec("c", session="s2")],
            np.stack([unit(1), unit(1, 0.5), unit(0, 1)]),
        )
        assert [h.record.id for h in store.search_vector(unit(1), session="s2")] == ["b", "c"]
        assert [h.record.id for h in store.search_vector(unit(1), level="L2")] == ["b"]
        assert store.search_vector(unit(1), session="s3") == []
        assert [h.record.id for h in store.search_vector(unit(1), session="s2", level="L4")] == [
            "c"
        ]

    def test_bad_query_vectors(self, store: MemoryStore) -> None:
        store.put([rec("a")], np.stack([unit(1)]))
        for bad in (np.full(DIM, np.nan), np.zeros(DIM)):
            with pytest.raises(ConfigError):
                store.search_vector(bad)

    def test_empty_store_searches_return_empty(self, store: MemoryStore) -> None:
        assert store.search_lexical("anything 任何") == []
        assert store.search_vector(unit(1)) == []
        assert list(store.scan()) == []
        assert store.get(["x"]) == []

    # -- embedding cache ------------------------------------------------------------------------

    def test_embedding_cache_round_trip(self, store: MemoryStore) -> None:
        assert store.cached_vectors("m1", ["h1"]) == {}
        store.cache_vectors("m1", {"h1": unit(1), "h2": np.arange(3, dtype=np.float32)})
        got = store.cached_vectors("m1", ["h1", "h2", "h3"])
        assert set(got) == {"h1", "h2"}
        np.testing.assert_array_equal(got["h1"], unit(1))
        np.testing.assert_array_equal(got["h2"], [0, 1, 2])
        assert got["h1"].dtype == np.float32
        assert store.cached_vectors("m2", ["h1"]) == {}
        store.cache_vectors("m1", {"h1": unit(0, 1)})
        np.testing.assert_array_equal(store.cached_vectors("m1", ["h1"])["h1"], unit(0, 1))
        with pytest.raises(ConfigError):
            store.cache_vectors("m1", {"h4": np.array([np.nan])})

    # -- concurrency, lifecycle, invariants ---------------------------------------------------

    def test_concurrent_puts_from_threads(self, store: MemoryStore) -> None:
        def work(t: int) -> None:
            for i in range(25):
                store.put([rec(f"t{t}-{i}", f"thread {t} item {i}")], np.stack([unit(1, t + i)]))

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert store.count() == 100
        assert len(store.search_vector(unit(1), limit=200)) == 100

    def test_closed_store_raises(self, store: MemoryStore) -> None:
        store.close()
        with pytest.raises(StoreError):
            store.put([rec("a")])
        with pytest.raises(StoreError):
            store.get(["a"])

    @settings(
        max_examples=25,
        deadline=None,
        # One store per test, cleaned after each example; subclasses share the method on purpose.
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.differing_executors,
        ],
    )
    @given(
        st.lists(
            st.tuples(st.text(max_size=40), st.floats(-1e9, 1e9), st.integers(-5, 5)),
            max_size=12,
        )
    )
    def test_text_round_trips_and_scan_is_chronological(
        self, store: MemoryStore, rows: list[tuple[str, float, int]]
    ) -> None:
        records = [
            MemoryRecord(id=f"h{i}", content=text, timestamp=ts, seq=seq, session="prop")
            for i, (text, ts, seq) in enumerate(rows)
        ]
        store.put(records)
        try:
            assert store.get([r.id for r in records]) == records
            keys = [(r.timestamp, r.seq, r.id) for r in store.scan(session="prop")]
            assert keys == sorted((r.timestamp, r.seq, r.id) for r in records)
        finally:
            store.delete([r.id for r in records])


__all__ = ["DIM", "FULL", "StoreConformance", "rec", "unit"]
