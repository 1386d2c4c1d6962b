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
