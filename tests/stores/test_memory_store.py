"""InMemoryStore runs the whole MemoryStore conformance suite, plus BM25 specifics."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from loomctx.stores import InMemoryStore, MemoryRecord
from loomctx.testing.store_conformance import TENANT, ReembedConformance, StoreConformance


class TestInMemoryStore(StoreConformance, ReembedConformance):
    @pytest.fixture
    def store(self) -> Iterator[InMemoryStore]:
        s = InMemoryStore()
        yield s
        s.close()


def test_bm25_prefers_rarer_terms() -> None:
    store = InMemoryStore()
    common = [MemoryRecord(id=f"c{i}", content="common words here") for i in range(5)]
    store.put([*common, MemoryRecord(id="rare", content="common words and a zebra")])
    hits = store.search_lexical("zebra common", scope=TENANT)
    assert hits[0].record.id == "rare"
    assert hits[0].score > hits[1].score


def test_index_forgets_replaced_and_deleted_text() -> None:
    store = InMemoryStore()
    store.put([MemoryRecord(id="a", content="zebra")])
    store.put([MemoryRecord(id="a", content="lion")])
    store.delete(["a"], scope=TENANT)
    store.put([MemoryRecord(id="b", content="giraffe")])
    assert store.search_lexical("zebra lion", scope=TENANT) == []
    assert store._postings.keys() == {"giraffe"}


def test_bm25_scores_are_the_pipelines_bm25() -> None:
    """The store's keyed BM25 and the pipeline's BM25Index are one formula: on the same tokens
    they give the same scores (to float32 precision), and both forget nothing they should keep."""
    from loomctx.stores._text import query_tokens, tokenize
    from loomctx.text.lexical import BM25Index

    corpus = ["the zebra crossed the road at noon", "a zebra and a lion", "lions sleep at noon",
              "road works on the north road", "明天北京下雨", "北京的天气很好", "nothing here"]
    store = InMemoryStore()
    store.put([MemoryRecord(id=f"r{i}", content=text) for i, text in enumerate(corpus)])
    index = BM25Index()
    index.add_tokens([tokenize(text) for text in corpus])
    for query in ("zebra road", "noon lion", "北京 天气", "road road road", "absent"):
        expected = index.scores_tokens(query_tokens(query))
        hits = {h.record.id: h.score for h in store.search_lexical(query, scope=TENANT)}
        assert hits.keys() == {f"r{i}" for i, s in enumerate(expected) if s > 0}, query
        for rid, score in hits.items():
            assert score == pytest.approx(float(expected[int(rid[1:])]), rel=1e-5), (query, rid)


def test_vector_search_grows_its_matrix_and_finds_what_a_rebuild_finds() -> None:
    """Records added after a search join the search matrix in place (no copy of every stored
    vector per put); replaced and deleted ones rebuild it. Hits equal a fresh store's."""
    import numpy as np

    rng = np.random.default_rng(7)
    grown, fresh = InMemoryStore(), InMemoryStore()
    recs = [MemoryRecord(id=f"r{i}", content=f"memory {i}") for i in range(300)]
    vecs = rng.standard_normal((300, 8)).astype(np.float32)
    query = rng.standard_normal(8).astype(np.float32)
    grown.put(recs[:10], vecs[:10])
    grown.search_vector(query, scope=TENANT, limit=5)
    buffers = set()
    for i in range(10, 300, 7):  # a search between puts, as turns do
        grown.put(recs[i:i + 7], vecs[i:i + 7])
        grown.search_vector(query, scope=TENANT, limit=5)
        assert grown._matrix is not None
        matrix = grown._matrix[1]
        assert matrix.base is not None and matrix.base.shape[0] >= matrix.shape[0]
        buffers.add(id(matrix.base))
    assert len(buffers) < 10  # appended into spare room, reallocated only as it doubles
    fresh.put(recs, vecs)
    for store in (grown, fresh):
        store.put([MemoryRecord(id="r3", content="replaced")], vecs[3:4] * -1)
        store.delete(["r5"], scope=TENANT)
        store.put([MemoryRecord(id="late", content="late")], vecs[6:7])
    for limit in (1, 20, 400):
        want = fresh.search_vector(query, scope=TENANT, limit=limit)
        got = grown.search_vector(query, scope=TENANT, limit=limit)
        assert [(h.record.id, h.score) for h in got] == [(h.record.id, h.score) for h in want]
    assert grown._matrix is not None and fresh._matrix is not None
    assert grown._matrix[0] == fresh._matrix[0]
    assert np.array_equal(grown._matrix[1], fresh._matrix[1])
