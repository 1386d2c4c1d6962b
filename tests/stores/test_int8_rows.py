"""The int8 pre-scoring of a large vector index: its bounds hold, and a search through it returns
what the float32 product over every row returns."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import loomctx.stores._vector_index as vector_index
from loomctx.stores import MemoryRecord, SQLiteStore
from loomctx.stores._int8_rows import Int8Rows
from loomctx.stores._vector_index import VectorIndex
from loomctx.stores.protocol import Scope


def _units(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    m = rng.standard_normal((n, dim)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _exact(matrix: np.ndarray, query: np.ndarray, rows: np.ndarray | None, k: int) -> set[int]:
    """The rows of the float32 top k (no ties in random data)."""
    scores = matrix @ query if rows is None else matrix[rows] @ query
    best = np.argsort(-scores, kind="stable")[:k]
    return set((best if rows is None else rows[best]).tolist())


def _index(matrix: np.ndarray, scopes: list[tuple[str, str, str]], *, int8_from: int,
           levels: list[str] | None = None) -> VectorIndex:
    index = VectorIndex(matrix.shape[1], int8_from=int8_from)
    index.append(list(range(len(matrix))), matrix, scopes, levels or ["L1"] * len(matrix))
    return index


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 300), dim=st.integers(1, 40),
       spike=st.floats(0, 1e4), zero_rows=st.integers(0, 3))
def test_the_bounds_hold_for_every_row(seed: int, n: int, dim: int, spike: float,
                                       zero_rows: int) -> None:
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((n, dim)).astype(np.float32)
    matrix[0, 0] = spike  # one coordinate far above the others: a coarse scale for its row
    matrix[n - min(zero_rows, n):] = 0.0
    query = rng.standard_normal(dim).astype(np.float32)
    lower, upper = Int8Rows(matrix).bounds(query)
    exact = matrix.astype(np.float64) @ query.astype(np.float64)
    assert np.all(lower <= exact) and np.all(exact <= upper)
    single = matrix @ query  # the float32 product a search would otherwise rank by
    assert np.all(lower <= single) and np.all(single <= upper)


def _plain_copy(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The int8 copy written the plain way: every row at once, then transposed."""
    s = np.abs(matrix).max(axis=1) / np.float32(127)
    s[s == 0] = 1.0
    c = np.clip(np.rint(matrix / s[:, None]), -127, 127)
    miss = matrix - c * s[:, None].astype(np.float64)
    return (np.ascontiguousarray(c.astype(np.int8).T), s.astype(np.float64),
            np.sqrt(np.einsum("ij,ij->i", miss, miss)))


@pytest.mark.parametrize("n", [0, 1, 255, 256, 257, 700])
def test_the_copy_made_a_chunk_at_a_time_is_the_plain_copy(
        n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(n)
    matrix = rng.standard_normal((n, 24)).astype(np.float32)
    if n:
        matrix[0] = 0.0  # a zero row
        matrix[-1] = -np.abs(matrix[-1])  # its largest magnitude negative
        matrix[n // 2, 3] = 1e4  # a spike
    seen = []
    real = vector_index.Int8Rows.__init__.__globals__["_graph"]
    monkeypatch.setitem(vector_index.Int8Rows.__init__.__globals__, "_graph",
                        lambda *arrays: seen.append(arrays) or real(*arrays))
    Int8Rows(matrix)
    for got, want in zip(seen[0], _plain_copy(matrix), strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got, want)


def test_the_bounds_are_tight_enough_to_skip_most_rows() -> None:
    rng = np.random.default_rng(7)
    matrix = _units(rng, 20_000, 256)
    lower, upper = Int8Rows(matrix).bounds(matrix[3])
    cut = np.partition(lower, len(lower) - 100)[len(lower) - 100]
    # about 100–300 rows stay in play of 20,000 (the bound is ~±0.02 on unit vectors)
    assert np.count_nonzero(upper >= cut) < 1000


def test_a_zero_query_scores_every_row_zero() -> None:
    lower, upper = Int8Rows(_units(np.random.default_rng(1), 50, 8)).bounds(np.zeros(8, np.float32))
    assert not lower.any() and not upper.any()


@pytest.mark.parametrize("k", [1, 10, 255])
def test_a_search_through_the_int8_copy_is_the_float32_top_k(k: int) -> None:
    rng = np.random.default_rng(k)
    matrix = _units(rng, 3000, 64)
    scopes = [("t", "a", f"s{i % 3}") for i in range(len(matrix))]
    levels = ["L1" if i % 2 else "L2" for i in range(len(matrix))]
    plain = _index(matrix, scopes, int8_from=10**9, levels=levels)
    int8 = _index(matrix, scopes, int8_from=0, levels=levels)
    for query in (matrix[5], _units(rng, 1, 64)[0]):
        for scope, level in ((Scope(tenant="t"), None), (Scope(tenant="t"), "L2"),
                             (Scope(tenant="t", agent="a", session="s1"), None)):
            fast = dict(int8.search(query, k, scope, level))
            slow = dict(plain.search(query, k, scope, level))
            assert set(fast) == set(slow)
            assert all(abs(fast[pk] - slow[pk]) < 1e-5 for pk in slow)
    assert int8._int8_rows is not None and plain._int8_rows is None


def test_rows_appended_after_the_copy_are_scored_exactly_and_the_copy_follows_growth() -> None:
    rng = np.random.default_rng(3)
    matrix = _units(rng, 1000, 32)
    index = _index(matrix[:800], [("t", "", "")] * 800, int8_from=0)
    index.search(matrix[0], 5, Scope(tenant="t"), None)
    assert index._int8_rows is None  # an index's first search: a reloaded one may not last
    index.search(matrix[0], 5, Scope(tenant="t"), None)
    assert index._int8_rows is not None and index._int8_rows.rows == 800
    # 150 more rows (under a quarter of 800): the copy stays, the new rows are scored in float32
    index.append(list(range(800, 950)), matrix[800:950], [("t", "", "")] * 150, ["L1"] * 150)
    for query in (matrix[900], matrix[10]):
        assert {pk for pk, _ in index.search(query, 20, Scope(tenant="t"), None)} == \
            _exact(matrix[:950], query, None, 20)
    assert index._int8_rows.rows == 800
    index.append(list(range(950, 1000)), matrix[950:], [("t", "", "")] * 50, ["L1"] * 50)
    index.search(matrix[0], 5, Scope(tenant="t"), None)
    assert index._int8_rows.rows == 1000  # 200 new rows: a quarter, made again


def test_a_narrow_scope_or_a_small_index_reads_the_float32_rows_only() -> None:
    matrix = _units(np.random.default_rng(5), 400, 16)
    scopes = [("t", "a", "one" if i < 50 else "other") for i in range(400)]
    small = _index(matrix, scopes, int8_from=401)
    small.search(matrix[0], 5, Scope(tenant="t"), None)
    narrow = _index(matrix, scopes, int8_from=0)
    hits = narrow.search(matrix[0], 5, Scope(tenant="t", agent="a", session="one"), None)
    assert {pk for pk, _ in hits} == _exact(matrix, matrix[0], np.arange(50), 5)
    assert small._int8_rows is None and narrow._int8_rows is None


def test_the_sqlite_store_searches_the_same_through_the_int8_copy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(11)
    vectors = _units(rng, 600, 48)
    records = [MemoryRecord(id=f"m{i}", content=f"text {i}", session="s", agent="a")
               for i in range(len(vectors))]
    queries = _units(rng, 5, 48)

    def search(int8_from: int) -> list[list[tuple[str, float]]]:
        monkeypatch.setattr(vector_index, "INT8_FROM", int8_from)
        with SQLiteStore(tmp_path / f"{int8_from}.db") as store:
            store.put(records, vectors)
            out = [[(h.record.id, h.score) for h in store.search_vector(
                q, scope=Scope(agent="a", session="s"), limit=40)] for q in queries]
            assert (store._vectors._int8_rows is not None) == (int8_from == 0)
            return out

    fast, slow = search(0), search(10**9)
    for f, s in zip(fast, slow, strict=True):
        assert [i for i, _ in f] == [i for i, _ in s]
        assert np.allclose([x for _, x in f], [x for _, x in s], atol=1e-5)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 200), appended=st.integers(0, 60),
       k=st.integers(1, 60), share=st.floats(0.05, 1.0), unit=st.booleans())
def test_the_rows_in_play_are_those_the_bounds_keep(seed: int, n: int, appended: int, k: int,
                                                    share: float, unit: bool) -> None:
    """A search's rows in play are those whose upper bound reaches the k-th best lower bound
    among the scope's rows, the appended ones counted at their exact score: the bounds the
    graph cuts by are the ones ``bounds`` gives (and the bounds test holds those)."""
    rng = np.random.default_rng(seed)
    size = n + appended
    matrix = _units(rng, size, 16) if unit else (
        rng.standard_normal((size, 16)) * rng.uniform(0.1, 5.0, (size, 1))).astype(np.float32)
    query = rng.standard_normal(16).astype(np.float32)
    rows = np.flatnonzero(rng.random(size) < share)
    if len(rows) == 0:
        return
    k = min(k, len(rows))
    copy = Int8Rows(matrix[:n])
    tail = (matrix[n:] @ query).astype(np.float64)
    maybe = copy.in_play(query, k, tail=tail, rows=rows)
    assert maybe is not None
    lower, upper = copy.bounds(query)
    lower, upper = np.concatenate([lower, tail]), np.concatenate([upper, tail])
    cut = np.sort(lower[rows])[-k]
    slack = 1e-9 * (1.0 + np.abs(cut))  # the graph compares in units of the query's step
    sure = set(rows[upper[rows] >= cut + slack].tolist())
    assert sure <= set(maybe.tolist()) <= set(rows[upper[rows] >= cut - slack].tolist())
    assert _exact(matrix, query, rows, k) <= set(maybe.tolist())


def test_the_bounds_hold_below_float32s_normal_range() -> None:
    matrix = np.array([[7.309501438891791e-45]], dtype=np.float32)  # a subnormal row
    query = np.random.default_rng(0).standard_normal(1).astype(np.float32)
    lower, upper = Int8Rows(matrix).bounds(query)
    single = matrix @ query
    assert np.all(lower <= single) and np.all(single <= upper)
