"""What a session's memory keeps between builds (neighbours, vectors) follows every change."""

import numpy as np

from loomctx import HashingEmbedder, MemoryOptions, Session


def _session(l1: int = 60) -> Session:
    return Session(embedder=HashingEmbedder(), model="gpt-4o", clock=lambda: 1_700_000_000.0,
                   memory=MemoryOptions(l1_max_tokens=l1, l2_max_items=2))


def _say(s: Session, start: int, n: int) -> None:
    for i in range(start, start + n):
        s.add_message_sync("user" if i % 2 == 0 else "assistant", f"line {i} about the garden",
                           id=f"m{i}", timestamp=1_699_990_000 + i)


def test_neighbours_follow_new_messages_and_level_changes():
    s = _session(l1=10**6)  # nothing leaves L1 by itself
    m = s.memory
    _say(s, 0, 3)
    assert [r.id for r in m.adjacent("m2")] == ["m1"]  # no reply yet: kept as such
    _say(s, 3, 1)
    assert [r.id for r in m.adjacent("m2")] == ["m3", "m1"]  # the reply, once added
    assert {r.level for r in m.adjacent("m1")} == {"L1"}
    m._set_level(["m0", "m2"], "L4")  # as eviction and expiry move them
    assert {r.id: r.level for r in m.adjacent("m1")} == {"m2": "L4", "m0": "L4"}
    assert all(r is m.records[r.id] for r in m.adjacent("m1"))
    # Each call hands out its own list.
    m.adjacent("m2").clear()
    assert [r.id for r in m.adjacent("m2")] == ["m3", "m1"]


def test_lexical_hits_are_the_records_as_they_are_now():
    s = _session(l1=10**6)
    m = s.memory
    _say(s, 0, 4)
    m._set_level(["m1", "m2"], "L4")  # as eviction and expiry move them
    hits = m.search_lexical("garden", 10)
    assert {h.record.id: h.record.level for h in hits} == {
        "m0": "L1", "m1": "L4", "m2": "L4", "m3": "L1"}
    assert all(h.record is m.records[h.record.id] for h in hits)
    _say(s, 4, 1)  # indexed after the change: its document follows the others'
    assert {h.record.id for h in m.search_lexical("line 4", 10)} >= {"m4"}
    # A session reopened from the store: its L2 memories come back with their importance.
    m._set_level(["m3"], "L2", {"m3": 0.9})
    reopened = Session(s.id, embedder=HashingEmbedder(), model="gpt-4o", store=m.store,
                       clock=lambda: 1_700_000_000.0,
                       memory=MemoryOptions(l1_max_tokens=10**6, l2_max_items=2)).memory
    hits = reopened.search_lexical("garden", 10)
    assert len(hits) == 5 and all(h.record is reopened.records[h.record.id] for h in hits)
    assert reopened.records["m3"].level == "L2"


def test_kept_vectors_are_the_embedders_whatever_the_order():
    s = _session(l1=10**6)
    _say(s, 0, 8)
    m = s.memory
    records = [m.records[f"m{i}"] for i in (5, 0, 7, 5)]
    first = m.vectors(records)  # embedded now
    again = m.vectors(records[::-1])  # kept
    expected = s.memory.embedder.embed([r.content for r in records])
    assert first.dtype == np.float32 and first.shape == (4, m.embedder.dim)
    np.testing.assert_array_equal(first, expected.astype(np.float32))
    np.testing.assert_array_equal(again, first[::-1])
    assert m.vectors([]).shape == (0, m.embedder.dim)


def test_kept_vectors_stay_right_when_the_memo_starts_over(monkeypatch):
    import loomctx.memory.tiers as tiers

    monkeypatch.setattr(tiers, "VECTORS_MAX", 5)
    s = _session(l1=10**6)
    _say(s, 0, 12)
    m = s.memory
    records = [m.records[f"m{i}"] for i in range(12)]
    expected = m.embedder.embed([r.content for r in records]).astype(np.float32)
    for window in ([0, 1, 2], [2, 3, 4, 5], [0, 6, 7, 8, 9, 10, 11], [11, 0, 5], [1, 1]):
        got = m.vectors([records[i] for i in window])
        np.testing.assert_array_equal(got, expected[window])


def test_kept_token_counts_are_the_counters_and_follow_a_changed_text(monkeypatch):
    import dataclasses

    import loomctx.memory.tiers as tiers

    monkeypatch.setattr(tiers, "VECTORS_MAX", 3)
    s = _session(l1=10**6)
    _say(s, 0, 6)
    m = s.memory
    for i in (0, 1, 2, 3, 0, 4, 5, 1):  # past the cap: the memo starts over, counts stay right
        r = m.records[f"m{i}"]
        assert m.tokens(r) == m.counter.count(r.content)
        assert len(m._tokens) <= 3
    longer = dataclasses.replace(m.records["m0"], content="a much longer line " * 20)
    assert m.tokens(longer) == m.counter.count(longer.content) > m.tokens(m.records["m1"])
