"""The SQLite store keeps its vector index current through its own writes (no reload)."""

import numpy as np

from loomctx.stores import MemoryRecord, SQLiteStore
from loomctx.testing.store_conformance import TENANT


def _unit(rng, n, dim=16):
    v = rng.normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _recs(start, n, session="s"):
    return [MemoryRecord(id=f"r{i}", content=f"text {i}", agent="a", session=session,
                         level="L1")
            for i in range(start, start + n)]


def test_index_is_updated_in_place_and_agrees_with_a_reopened_store(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "v.db"
    store = SQLiteStore(path)
    store.put(_recs(0, 50), _unit(rng, 50))
    q = _unit(rng, 1)[0]
    store.search_vector(q, limit=5, scope=TENANT)
    index = store._vectors
    assert index is not None
    for start in range(50, 3000, 50):  # many appends: the buffers grow by doubling
        store.put(_recs(start, 50), _unit(rng, 50))
    store.set_level([f"r{i}" for i in range(0, 3000, 3)], "L4", scope=TENANT)
    store.cache_vectors("m", {"h": _unit(rng, 1)[0]}, tenant="default")
    live = store.search_vector(q, limit=20, level="L4", scope=TENANT)
    assert store._vectors is index  # never reloaded
    store.close()
    fresh = SQLiteStore(path)
    again = fresh.search_vector(q, limit=20, level="L4", scope=TENANT)
    assert [(h.record.id, round(h.score, 5)) for h in live] == [
        (h.record.id, round(h.score, 5)) for h in again]
    assert all(h.record.level == "L4" for h in live)
    fresh.close()


def test_replacing_a_record_reloads_the_index(tmp_path):
    rng = np.random.default_rng(1)
    store = SQLiteStore(tmp_path / "r.db")
    store.put(_recs(0, 10), _unit(rng, 10))
    q = _unit(rng, 1)[0]
    store.search_vector(q, limit=3, scope=TENANT)
    store.put(_recs(0, 1), q[None, :])  # r0 now equals the query
    [best] = store.search_vector(q, limit=1, scope=TENANT)
    assert best.record.id == "r0" and best.score > 0.999
    store.close()
