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
a user's own) is correct exactly when this class passes. The scoping contract (one scope never
reads another's records) comes from
:class:`~loomctx.testing.store_scope_conformance.ScopeConformance`, which this class inherits.
Needs pytest and hypothesis.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loomctx.errors import ConfigError, StoreError
from loomctx.stores._records import REEMBED_BATCH
from loomctx.stores.protocol import Level, MemoryRecord, MemoryStore, Scope
from loomctx.testing.store_scope_conformance import ScopeConformance

DIM = 8
TENANT = Scope()
"""The whole default tenant: the scope that sees every record these tests write by default."""
AGENT = "planner"


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


class StoreConformance(ScopeConformance):
    """Subclass and override ``store`` to run the whole MemoryStore contract on a backend."""

    @pytest.fixture
    def store(self) -> Iterator[MemoryStore]:
        raise NotImplementedError("override the `store` fixture with a fresh, empty store")

    # -- put / get ---------------------------------------------------------------------------

    def test_satisfies_protocol(self, store: MemoryStore) -> None:
        assert isinstance(store, MemoryStore)

    def test_round_trip_every_field(self, store: MemoryStore) -> None:
        store.put([FULL])
        assert store.get(["msg-1"], scope=TENANT) == [FULL]

    def test_get_keeps_asked_order_and_skips_missing(self, store: MemoryStore) -> None:
        store.put([rec("a"), rec("b"), rec("c")])
        assert [r.id for r in store.get(["c", "nope", "a"], scope=TENANT)] == ["c", "a"]
        assert store.get([], scope=TENANT) == []
        assert [r.id for r in store.get(["a", "a"], scope=TENANT)] == ["a"]
        with pytest.raises(ConfigError, match="list of ids"):
            store.get("a", scope=TENANT)

    def test_returned_dicts_are_copies(self, store: MemoryStore) -> None:
        meta = {"k": [1]}
        store.put([rec("a", metadata=meta)])
        meta["k"].append(2)
        got = store.get(["a"], scope=TENANT)[0]
        got.metadata["k"].append(3)  # type: ignore[index]
        assert store.get(["a"], scope=TENANT)[0].metadata == {"k": [1]}

    def test_search_hits_are_copies(self, store: MemoryStore) -> None:
        """What a search returns may be changed freely: the stored record stays as it was."""
        store.put([rec("a", "zebra text", metadata={"k": [1], "n": {"x": 1}},
                       message={"role": "user", "tool_calls": [{"id": "c1"}]})],
                  np.stack([unit(1)]))
        for hit in (store.search_vector(unit(1), scope=TENANT)[0],
                    store.search_lexical("zebra", scope=TENANT)[0]):
            hit.record.metadata["k"].append(2)  # type: ignore[index]
            hit.record.metadata["n"]["x"] = 2  # type: ignore[index]
            hit.record.message["tool_calls"][0]["id"] = "changed"  # type: ignore[index]
        kept = store.get(["a"], scope=TENANT)[0]
        assert kept.metadata == {"k": [1], "n": {"x": 1}}
        assert kept.message == {"role": "user", "tool_calls": [{"id": "c1"}]}

    def test_put_same_id_replaces(self, store: MemoryStore) -> None:
        store.put([rec("a", "old apples text")], np.stack([unit(1)]))
        store.put([rec("a", "new pears text", level="L1")], np.stack([unit(0, 1)]))
        assert store.count(scope=TENANT) == 1
        assert store.get(["a"], scope=TENANT)[0].content == "new pears text"
        assert store.search_lexical("apples", scope=TENANT) == []
        assert [h.record.id for h in store.search_lexical("pears", scope=TENANT)] == ["a"]
        [best] = store.search_vector(unit(0, 1), limit=1, scope=TENANT)
        assert best.score == pytest.approx(1.0, abs=1e-5)

    def test_replace_without_vector_drops_old_vector(self, store: MemoryStore) -> None:
        store.put([rec("a"), rec("b")], np.stack([unit(1), unit(0, 1)]))
        store.put([rec("a")])
        assert [h.record.id for h in store.search_vector(unit(1), scope=TENANT)] == ["b"]

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
        assert store.count(scope=TENANT) == 1
        assert store.get(["keep"], scope=TENANT)[0].content == "original"

    def test_duplicate_ids_in_one_put_name_the_id(self, store: MemoryStore) -> None:
        with pytest.raises(ConfigError, match="dup-7"):
            store.put([rec("dup-7"), rec("x"), rec("dup-7")])
        assert store.count(scope=TENANT) == 0

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
        assert store.count(scope=TENANT) == 0

    def test_wrong_dimension_rejected(self, store: MemoryStore) -> None:
        store.put([rec("a")], np.stack([unit(1)]))
        # The message says why (another embedder) and how to go on.
        with pytest.raises(ConfigError, match=r"dimension.*another embedder.*embedder="):
            store.put([rec("b")], np.ones((1, DIM + 1)))
        with pytest.raises(ConfigError, match=r"dimension.*another embedder.*embedder="):
            store.search_vector(np.ones(DIM + 1), scope=TENANT)
        assert store.get(["b"], scope=TENANT) == []

    def test_lone_surrogates_become_replacement_char(self, store: MemoryStore) -> None:
        store.put([rec("s", "bad \ud800 half", role="x\udfffy")])
        got = store.get(["s"], scope=TENANT)[0]
        assert got.content == "bad \ufffd half"
        assert got.role == "x\ufffdy"
        # Identity is never rewritten: ids and scope fields with lone surrogates are refused.
        for bad in (rec("id\ud800"), rec("t", tenant="t\ud800"),
                    rec("a", agent="a\ud800"), rec("s", agent=AGENT, session="s\ud800")):
            with pytest.raises(ConfigError, match="surrogate"):
                store.put([bad])
        assert store.count(scope=TENANT) == 1

    # -- delete / set_level / scan / count ----------------------------------------------------

    def test_delete(self, store: MemoryStore) -> None:
        vectors = np.stack([unit(1), unit(0, 1)])
        store.put([rec("a", "alpha words"), rec("b", "beta words")], vectors)
        assert store.delete(["a", "missing"], scope=TENANT) == 1
        assert store.get(["a"], scope=TENANT) == []
        assert [h.record.id for h in store.search_lexical("words", scope=TENANT)] == ["b"]
        assert [h.record.id for h in store.search_vector(unit(1), scope=TENANT)] == ["b"]
        assert store.delete([], scope=TENANT) == 0

    def test_set_level(self, store: MemoryStore) -> None:
        store.put([rec("a"), rec("b")], np.stack([unit(1), unit(0, 1)]))
        store.set_level(["a", "missing"], "L2", scope=TENANT)
        assert store.get(["a"], scope=TENANT)[0].level == "L2"
        assert store.count(level="L2", scope=TENANT) == 1
        hits = store.search_vector(unit(0, 1), level="L2", scope=TENANT)
        assert [h.record.id for h in hits] == ["a"]
        with pytest.raises(ConfigError):
            store.set_level(["a"], "L7", scope=TENANT)  # type: ignore[arg-type]

    def test_scan_filters_and_order(self, store: MemoryStore) -> None:
        store.put([
            rec("late", timestamp=20.0, agent="x", session="s1"),
            rec("tie-2", timestamp=10.0, seq=2, agent="x", session="s1"),
            rec("tie-1", timestamp=10.0, seq=1, agent="x", session="s1", level="L1"),
            rec("other", timestamp=5.0, agent="x", session="s2"),
            rec("y-own", timestamp=1.0, agent="y"),
        ])
        assert [r.id for r in store.scan(scope=TENANT)] == [
            "y-own", "other", "tie-1", "tie-2", "late"
        ]
        s1 = Scope(agent="x", session="s1")
        assert [r.id for r in store.scan(scope=s1)] == ["tie-1", "tie-2", "late"]
        assert [r.id for r in store.scan(scope=TENANT, level="L1")] == ["tie-1"]
        assert [r.id for r in store.scan(scope=Scope(agent="x"))] == [
            "other", "tie-1", "tie-2", "late"
        ]
        assert [r.id for r in store.scan(scope=s1, level="L4")] == ["tie-2", "late"]
        assert list(store.scan(scope=Scope(agent="x", session="none"))) == []

    def test_count(self, store: MemoryStore) -> None:
        assert store.count(scope=TENANT) == 0
        s1 = Scope(agent=AGENT, session="s1")
        store.put([
            rec("a", agent=AGENT, session="s1"),
            rec("b", agent=AGENT, session="s1", level="L1"),
            rec("c"),
        ])
        assert store.count(scope=TENANT) == 3
        assert store.count(scope=s1) == 2
        assert store.count(scope=s1, level="L1") == 1
        assert store.count(scope=TENANT, level="L3") == 0

    # -- lexical search ------------------------------------------------------------------------

    def test_lexical_english_ranks_relevant_first(self, store: MemoryStore) -> None:
        store.put([
            rec("weather", "The weather in Paris is sunny and the weather stays warm"),
            rec("paris", "Paris is the capital of France"),
            rec("other", "Unrelated note about databases"),
        ])
        hits = store.search_lexical("Paris weather", scope=TENANT)
        assert [h.record.id for h in hits] == ["weather", "paris"]
        assert hits[0].score > hits[1].score > 0

    def test_lexical_chinese(self, store: MemoryStore) -> None:
        store.put([
            rec("hike", "我喜欢在周末去爬山"),
            rec("food", "我喜欢吃饺子"),
            rec("en", "I like hiking"),
        ])
        assert store.search_lexical("爬山", scope=TENANT)[0].record.id == "hike"
        assert [h.record.id for h in store.search_lexical("饺子", scope=TENANT)] == ["food"]
        assert store.search_lexical("周末爬山", scope=TENANT)[0].record.id == "hike"

    def test_lexical_filters_and_limit(self, store: MemoryStore) -> None:
        store.put([
            rec(f"r{i}", f"shared keyword {i}", agent=AGENT, session=f"s{i % 2}",
                level="L1" if i < 3 else "L4")
            for i in range(8)
        ])
        s0, s1 = Scope(agent=AGENT, session="s0"), Scope(agent=AGENT, session="s1")
        assert len(store.search_lexical("keyword", limit=3, scope=TENANT)) == 3
        assert store.search_lexical("keyword", limit=0, scope=TENANT) == []
        assert {h.record.id for h in store.search_lexical("keyword", scope=s1)} == {
            "r1", "r3", "r5", "r7"
        }
        assert {h.record.id for h in store.search_lexical("keyword", scope=TENANT, level="L1")} == {
            "r0", "r1", "r2"
        }
        assert {h.record.id for h in store.search_lexical("keyword", scope=s0, level="L1")} == {
            "r0", "r2"
        }
        with pytest.raises(ConfigError):
            store.search_lexical("keyword", limit=-1, scope=TENANT)

    @pytest.mark.parametrize(
        "query", ['"', 'AND OR NOT "unbalanced', "NEAR(a b)", "col:value*", "^x", "", "   ", "(("]
    )
    def test_lexical_query_syntax_is_inert(self, store: MemoryStore, query: str) -> None:
        store.put([rec("a", "value of the column")])
        assert all(h.record.id == "a" for h in store.search_lexical(query, scope=TENANT))

    # -- vector search -------------------------------------------------------------------------

    def test_vector_orders_by_cosine(self, store: MemoryStore) -> None:
        vectors = np.stack([unit(1, 0), unit(1, 1), unit(0, 1), unit(-1, 0)])
        store.put([rec("x"), rec("xy"), rec("y"), rec("minus-x")], vectors)
        store.put([rec("no-vector")])
        hits = store.search_vector(unit(1, 0.1) * 7, scope=TENANT)  # not unit: the store normalises
        assert [h.record.id for h in hits] == ["x", "xy", "y", "minus-x"]
        expected = vectors @ unit(1, 0.1)
        assert [h.score for h in hits] == pytest.approx(sorted(expected, reverse=True), abs=1e-5)
        hits = store.search_vector(unit(0, 1), limit=2, scope=TENANT)
        assert [h.record.id for h in hits] == ["y", "xy"]

    def test_vector_filters(self, store: MemoryStore) -> None:
        store.put(
            [
                rec("a", agent=AGENT, session="s1"),
                rec("b", agent=AGENT, session="s2", level="L2"),
                rec("c", agent=AGENT, session="s2"),
            ],
            np.stack([unit(1), unit(1, 0.5), unit(0, 1)]),
        )
        s2 = Scope(agent=AGENT, session="s2")
        assert [h.record.id for h in store.search_vector(unit(1), scope=s2)] == ["b", "c"]
        assert [h.record.id for h in store.search_vector(unit(1), scope=TENANT, level="L2")] == [
            "b"
        ]
        assert store.search_vector(unit(1), scope=Scope(agent=AGENT, session="s3")) == []
        assert [h.record.id for h in store.search_vector(unit(1), scope=s2, level="L4")] == ["c"]

    @pytest.mark.parametrize("limit", [1, 3, 7, 40])
    def test_vector_scope_and_limit_match_a_full_scan(self, store: MemoryStore,
                                                      limit: int) -> None:
        """Records of three sessions and two levels interleaved by score: every scope's top
        ``limit`` is a full scan's (the best of other scopes never crowd a scope's out)."""
        records, vectors = [], []
        for n in range(36):
            angle = np.radians(5 * ((n * 7) % 36))  # distinct scores, far from ties
            records.append(rec(f"m{n:02d}", agent=AGENT, session=("s1", "s2", "s3")[n % 3],
                               level=("L4", "L2")[n % 5 == 0]))
            vectors.append(unit(float(np.cos(angle)), float(np.sin(angle))))
        store.put(records, np.stack(vectors))
        probe = unit(1, 0.1)
        score = {r.id: float(v @ probe) for r, v in zip(records, vectors, strict=True)}
        cases: list[tuple[Scope, Level | None]] = [
            (TENANT, None), (Scope(agent=AGENT, session="s2"), None), (TENANT, "L2"),
            (Scope(agent=AGENT, session="s1"), "L4")]
        for scope, level in cases:
            inside = sorted((r.id for r in records if scope.covers(r) and level in (None, r.level)),
                            key=lambda i: -score[i])
            hits = store.search_vector(probe, scope=scope, level=level, limit=limit)
            assert [h.record.id for h in hits] == inside[:limit], (scope, level)

    def test_bad_query_vectors(self, store: MemoryStore) -> None:
        store.put([rec("a")], np.stack([unit(1)]))
        for bad in (np.full(DIM, np.nan), np.zeros(DIM)):
            with pytest.raises(ConfigError):
                store.search_vector(bad, scope=TENANT)

    def test_empty_store_searches_return_empty(self, store: MemoryStore) -> None:
        assert store.search_lexical("anything 任何", scope=TENANT) == []
        assert store.search_vector(unit(1), scope=TENANT) == []
        assert list(store.scan(scope=TENANT)) == []
        assert store.get(["x"], scope=TENANT) == []

    # -- embedding cache ------------------------------------------------------------------------

    def test_embedding_cache_round_trip(self, store: MemoryStore) -> None:
        assert store.cached_vectors("m1", ["h1"], tenant="default") == {}
        both = {"h1": unit(1), "h2": np.arange(3, dtype=np.float32)}
        store.cache_vectors("m1", both, tenant="default")
        got = store.cached_vectors("m1", ["h1", "h2", "h3"], tenant="default")
        assert set(got) == {"h1", "h2"}
        np.testing.assert_array_equal(got["h1"], unit(1))
        np.testing.assert_array_equal(got["h2"], [0, 1, 2])
        assert got["h1"].dtype == np.float32
        assert store.cached_vectors("m2", ["h1"], tenant="default") == {}
        store.cache_vectors("m1", {"h1": unit(0, 1)}, tenant="default")
        again = store.cached_vectors("m1", ["h1"], tenant="default")
        np.testing.assert_array_equal(again["h1"], unit(0, 1))
        with pytest.raises(ConfigError):
            store.cache_vectors("m1", {"h4": np.array([np.nan])}, tenant="default")

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
        assert store.count(scope=TENANT) == 100
        assert len(store.search_vector(unit(1), limit=200, scope=TENANT)) == 100

    def test_closed_store_raises(self, store: MemoryStore) -> None:
        store.close()
        with pytest.raises(StoreError):
            store.put([rec("a")])
        with pytest.raises(StoreError):
            store.get(["a"], scope=TENANT)

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
            MemoryRecord(id=f"h{i}", content=text, timestamp=ts, seq=seq, agent=AGENT,
                         session="prop")
            for i, (text, ts, seq) in enumerate(rows)
        ]
        store.put(records)
        try:
            assert store.get([r.id for r in records], scope=TENANT) == records
            scope = Scope(agent=AGENT, session="prop")
            keys = [(r.timestamp, r.seq, r.id) for r in store.scan(scope=scope)]
            assert keys == sorted((r.timestamp, r.seq, r.id) for r in records)
        finally:
            store.delete([r.id for r in records], scope=TENANT)


class ReembedConformance:
    """The contract of a store's optional ``reembed(embed)``, which moves the store to another
    embedder (:func:`loomctx.stores.reembed`): every vector replaced in every scope, the store's
    dimension (its ``dims``, which a session checks its embedder against) the new one,
    vector-less records left so, and all or nothing. loomctx's backends
    subclass it beside :class:`StoreConformance`; a user's store that offers ``reembed`` can too.
    """

    @pytest.fixture
    def store(self) -> Iterator[Any]:
        raise NotImplementedError("override the `store` fixture with a fresh, empty store")

    def test_reembed_replaces_every_vector_in_every_scope(self, store: Any) -> None:
        other = Scope(tenant="other")
        store.put([rec("a", "apples"), rec("b", "pears")], np.stack([unit(1), unit(0, 1)]))
        store.put([rec("c", "plums", tenant="other")], np.stack([unit(1)]))
        store.put([rec("bare", "no vector here")])
        asked: list[str] = []
        new = {"apples": [1.0, 0.0, 0.0], "pears": [0.0, 2.0, 0.0], "plums": [0.0, 0.0, 1.0]}

        def embed(texts: list[str]) -> np.ndarray:
            asked.extend(texts)
            return np.array([new[t] for t in texts])

        assert store.dims == DIM
        assert store.reembed(embed) == 3
        assert store.dims == 3
        assert sorted(asked) == ["apples", "pears", "plums"]  # the vector-less record is not
        hits = store.search_vector(np.array([0.0, 1.0, 0.0]), scope=TENANT, limit=10)
        assert [h.record.id for h in hits] == ["b", "a"]  # rows are stored unit length
        assert hits[0].score == pytest.approx(1.0, abs=1e-5)
        assert hits[1].score == pytest.approx(0.0, abs=1e-5)
        assert [h.record.id for h in store.search_vector(np.array([0.0, 0.0, 1.0]), scope=other,
                                                         limit=10)] == ["c"]
        assert store.get(["a", "bare"], scope=TENANT) == [rec("a", "apples"),
                                                          rec("bare", "no vector here")]
        with pytest.raises(ConfigError, match="dimension"):  # the store's dimension is the new one
            store.put([rec("d")], np.stack([unit(1)]))
        store.put([rec("d", "figs")], np.array([[1.0, 1.0, 0.0]]))
        assert store.search_vector(np.array([1.0, 1.0, 0.0]), scope=TENANT,
                                   limit=1)[0].record.id == "d"

    @pytest.mark.parametrize("embed", [
        lambda texts: np.ones((len(texts) + 1, 3)),
        lambda texts: np.full((len(texts), 3), np.nan),
        lambda texts: np.zeros((len(texts), 3)),
        lambda texts: np.ones(3),
        lambda texts: "not vectors",
    ], ids=["one-row-too-many", "nan", "zero-rows", "one-dimensional", "not-an-array"])
    def test_reembed_refuses_bad_vectors_and_changes_nothing(
        self, store: Any, embed: object
    ) -> None:
        store.put([rec("a"), rec("b")], np.stack([unit(1), unit(0, 1)]))
        with pytest.raises(ConfigError):
            store.reembed(embed)
        with pytest.raises(ConfigError, match="takes a function"):
            store.reembed("not a function")
        hits = store.search_vector(unit(0, 1), scope=TENANT, limit=2)
        assert [h.record.id for h in hits] == ["b", "a"]
        assert hits[0].score == pytest.approx(1.0, abs=1e-5)

    def test_reembed_failing_midway_changes_nothing(self, store: Any) -> None:
        n = REEMBED_BATCH + 44  # loomctx's stores ask for the vectors in two calls
        store.put([rec(f"r{i}", f"text {i}") for i in range(n)], np.stack([unit(1)] * n))
        asked: list[int] = []

        def embed(texts: list[str]) -> np.ndarray:
            asked.append(len(texts))
            if sum(asked) == n:  # the call that would complete the set fails
                raise RuntimeError("the model crashed")
            return np.ones((len(texts), 3))

        with pytest.raises(RuntimeError, match="crashed"):
            store.reembed(embed)
        assert sum(asked) == n
        assert store.search_vector(unit(1), scope=TENANT, limit=1)[0].score == pytest.approx(
            1.0, abs=1e-5)
        assert store.dims == DIM
        store.put([rec("x")], np.stack([unit(0, 1)]))  # the old dimension still holds

    def test_reembed_without_vectors_frees_the_dimension(self, store: Any) -> None:
        assert store.reembed(lambda texts: np.ones((len(texts), 3))) == 0
        store.put([rec("a")], np.stack([unit(1)]))
        store.delete(["a"], scope=TENANT)
        store.put([rec("bare")])
        assert store.reembed(lambda texts: np.ones((len(texts), 3))) == 0
        assert store.dims is None
        store.put([rec("b", "beans")], np.array([[0.0, 3.0, 4.0]]))  # any dimension now
        assert store.search_vector(np.array([0.0, 3.0, 4.0]), scope=TENANT,
                                   limit=5)[0].record.id == "b"


__all__ = ["AGENT", "DIM", "FULL", "TENANT", "ReembedConformance", "StoreConformance", "rec",
           "unit"]
