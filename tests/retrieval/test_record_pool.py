"""RecordPool: the agent's memory is read from the store at most once per ``refresh``."""

from __future__ import annotations

import pytest

from loomctx import ConfigError, HashingEmbedder
from loomctx.retrieval._pool import RecordPool
from loomctx.stores.protocol import MemoryRecord


def test_reads_once_per_refresh_and_again_when_invalidated() -> None:
    reads: list[int] = []
    clock = [100.0]
    stored = [MemoryRecord(id="a", content="the Rotterdam route ships by rail")]

    def load() -> list[MemoryRecord]:
        reads.append(1)
        return list(stored)

    pool = RecordPool(load, HashingEmbedder(), refresh=30.0, timer=lambda: clock[0])
    assert not pool.fresh_and_empty()  # never read
    assert [r.id for r, _ in pool.rank("Rotterdam rail", 5)] == ["a"]
    stored.append(MemoryRecord(id="b", content="Rotterdam moves to rail in June"))
    pool.rank("Rotterdam", 5)
    assert len(reads) == 1  # within the refresh: the first read is reused
    clock[0] += 30.0
    assert {r.id for r, _ in pool.rank("Rotterdam", 5)} == {"a", "b"}
    assert len(reads) == 2
    pool.invalidate()
    pool.records()
    assert len(reads) == 3


def test_empty_and_fresh_is_known_without_reading() -> None:
    reads: list[int] = []
    pool = RecordPool(lambda: reads.append(1) or [], HashingEmbedder(), timer=lambda: 0.0)
    assert pool.rank("anything", 3) == [] and pool.fresh_and_empty()
    assert len(reads) == 1
    with pytest.raises(ConfigError, match="refresh"):
        RecordPool(list, HashingEmbedder(), refresh=-1)


def test_a_record_sharing_no_word_needs_a_close_embedding() -> None:
    records = [MemoryRecord(id="a", content="The Rotterdam route ships by rail."),
               MemoryRecord(id="b", content="Lunch was pasta with a nice tomato sauce.")]
    pool = RecordPool(lambda: list(records), HashingEmbedder())
    assert [r.id for r, _ in pool.rank("Rotterdam rail", 5)] == ["a"]
    assert pool.rank("quarterly invoices", 5) == []
    everything = RecordPool(lambda: list(records), HashingEmbedder(), min_similarity=-1.0)
    assert {r.id for r, _ in everything.rank("quarterly invoices", 5)} == {"a", "b"}
