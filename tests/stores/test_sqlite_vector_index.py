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


def test_a_repeated_search_reads_no_rows_again(tmp_path, monkeypatch):
    """The records a search returned are kept with the index: the next search of the same
    records decodes nothing from SQLite (the cost that grew with every build)."""
    import loomctx.stores.sqlite as sqlite_store

    rng = np.random.default_rng(2)
    store = SQLiteStore(tmp_path / "k.db")
    store.put(_recs(0, 40), _unit(rng, 40))
    q = _unit(rng, 1)[0]
    first = store.search_vector(q, limit=10, scope=TENANT)
    read: list[int] = []
    real = sqlite_store.fetch
    monkeypatch.setattr(sqlite_store, "fetch", lambda conn, pks: read.extend(pks)
                        or real(conn, pks))
    again = store.search_vector(q, limit=10, scope=TENANT)
    assert read == []
    assert [(h.record, h.score) for h in again] == [(h.record, h.score) for h in first]
    wider = store.search_vector(q, limit=15, scope=TENANT)
    assert len(read) == 5 and [h.record.id for h in wider[:10]] == [h.record.id
                                                                     for h in first]
    store.close()


def test_kept_records_follow_level_changes_and_other_writers(tmp_path):
    """A kept record shows the level the store's own ``set_level`` gave it, and a write by
    another connection (a replaced text) is read again, never served stale."""
    rng = np.random.default_rng(3)
    path = tmp_path / "f.db"
    store = SQLiteStore(path)
    vecs = _unit(rng, 20)
    store.put(_recs(0, 20), vecs)
    q = vecs[0]
    [hit] = store.search_vector(q, limit=1, scope=TENANT)
    assert (hit.record.id, hit.record.level) == ("r0", "L1")
    store.set_level(["r0"], "L4", scope=TENANT)
    [hit] = store.search_vector(q, limit=1, scope=TENANT)
    assert hit.record.level == "L4"
    assert store.search_vector(q, limit=1, scope=TENANT, level="L1")[0].record.id != "r0"
    other = SQLiteStore(path)
    other.put([MemoryRecord(id="r0", content="rewritten", agent="a", session="s",
                            level="L2")], q[None, :])
    other.close()
    [hit] = store.search_vector(q, limit=1, scope=TENANT)
    assert (hit.record.content, hit.record.level) == ("rewritten", "L2")
    store.close()


def _exact(store, q, scope, level=None, k=8):
    """Brute force over a reopened store: the answer a fresh index gives."""
    return [(h.record.id, round(h.score, 6)) for h in store.search_vector(
        q, limit=k, scope=scope, level=level)]


def test_scope_rows_follow_appends_and_level_changes(tmp_path):
    """The rows of a scope are kept between searches: a row added to the scope, or moved in or
    out of a level, is searched (or not) at once, as a reopened store would."""
    from loomctx.stores import Scope

    rng = np.random.default_rng(2)
    path = tmp_path / "s.db"
    store = SQLiteStore(path)
    store.put(_recs(0, 30, session="s1") + _recs(100, 30, session="s2"), _unit(rng, 60))
    q = _unit(rng, 1)[0]
    s1 = Scope(agent="a", session="s1")
    for scope, level in ((s1, None), (s1, "L4"), (TENANT, None), (TENANT, "L1")):
        store.search_vector(q, limit=8, scope=scope, level=level)  # rows kept for each
    store.put([MemoryRecord(id="new", content="new", agent="a", session="s1", level="L1")],
              q[None, :])  # equals the query: must come first in s1 and tenant-wide
    assert _exact(store, q, s1)[0][0] == "new"
    assert _exact(store, q, TENANT, "L1")[0][0] == "new"
    store.set_level([f"r{i}" for i in range(0, 30, 2)], "L4", scope=s1)
    live = {(sc, lv): _exact(store, q, sc, lv)
            for sc, lv in ((s1, None), (s1, "L4"), (TENANT, None), (TENANT, "L1"))}
    assert live[(s1, None)][0][0] == "new" and live[(TENANT, None)][0][0] == "new"
    assert live[(s1, "L4")] and all(int(i[1:]) % 2 == 0 for i, _ in live[(s1, "L4")])
    store.close()
    fresh = SQLiteStore(path)
    assert live == {key: _exact(fresh, q, *key) for key in live}
    fresh.close()


def test_a_scope_of_every_row_gives_the_full_product_order(tmp_path):
    """When every row is in scope the product is not indexed: the best rows and their scores
    are those of the whole product, and a limit above the rows returns them all."""
    rng = np.random.default_rng(3)
    store = SQLiteStore(tmp_path / "a.db")
    vecs = _unit(rng, 40)
    store.put(_recs(0, 40), vecs)
    q = _unit(rng, 1)[0]
    hits = store.search_vector(q, limit=5, scope=TENANT)
    order = np.argsort(-(vecs @ q), kind="stable")[:5]
    assert [h.record.id for h in hits] == [f"r{i}" for i in order]
    assert len(store.search_vector(q, limit=100, scope=TENANT)) == 40
    store.close()


def test_an_embedding_another_process_caches_does_not_reload_the_index(tmp_path):
    rng = np.random.default_rng(5)
    path = tmp_path / "c.db"
    store, other = SQLiteStore(path), SQLiteStore(path)
    vecs = _unit(rng, 30)
    store.put(_recs(0, 30), vecs)
    before = store.search_vector(vecs[4], limit=3, scope=TENANT)
    index = store._vectors
    other.cache_vectors("m", {"h": vecs[0]}, tenant="default")
    assert store.search_vector(vecs[4], limit=3, scope=TENANT) == before
    assert store._vectors is index  # kept: the other write was not one the index depends on
    other.close()
    store.close()


def test_another_processes_vectors_and_levels_are_seen_after_this_ones_own_writes(tmp_path):
    """A write of this store keeps its index current with its own change; it must not also
    stamp the index as holding another connection's earlier change."""
    rng = np.random.default_rng(6)
    path = tmp_path / "o.db"
    store, other = SQLiteStore(path), SQLiteStore(path)
    vecs = _unit(rng, 40)
    store.put(_recs(0, 30), vecs[:30])
    store.search_vector(vecs[0], limit=3, scope=TENANT)
    other.put(_recs(30, 10), vecs[30:])  # another process's new memories
    store.cache_vectors("m", {"h": vecs[0]}, tenant="default")  # then a write of this one
    assert store.search_vector(vecs[35], limit=1, scope=TENANT)[0].record.id == "r35"
    other.set_level(["r35"], "L4", scope=TENANT)
    store.put(_recs(100, 1), vecs[:1])  # this process's own write, kept in its index
    [hit] = store.search_vector(vecs[35], limit=1, scope=TENANT)
    assert (hit.record.id, hit.record.level) == ("r35", "L4")
    assert store.search_vector(vecs[35], limit=1, scope=TENANT, level="L1")[0].record.id != "r35"
    other.close()
    store.close()


def test_a_file_without_the_index_count_gets_it_when_it_opens(tmp_path):
    import sqlite3

    from loomctx.stores._sqlite_schema import index_version

    path = tmp_path / "old.db"
    SQLiteStore(path).close()
    conn = sqlite3.connect(path)  # a file as an earlier loomctx left it
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' "
                                "AND name LIKE '%counted%'").fetchall():
        conn.execute(f"DROP TRIGGER {name}")
    conn.execute("DELETE FROM meta WHERE key = 'index_version'")
    conn.commit()
    assert index_version(conn) is None
    conn.close()
    store = SQLiteStore(path)
    store.put(_recs(0, 3), _unit(np.random.default_rng(1), 3))
    conn = sqlite3.connect(path)
    assert index_version(conn) == "3"  # three vectors inserted, counted from 0
    conn.close()
    store.close()


def test_an_index_loaded_from_an_empty_store_takes_the_first_vectors(tmp_path):
    """A search of a fresh store loads an index of width 0; the first put (a long first
    message, whose build searched the store) appends vectors of the embedder's width to it
    instead of failing with "could not broadcast input array from shape (0,0)"."""
    rng = np.random.default_rng(2)
    store = SQLiteStore(tmp_path / "fresh.db")
    q = _unit(rng, 1)[0]
    assert store.search_vector(q, limit=5, scope=TENANT) == []
    index = store._vectors
    store.put(_recs(0, 3), _unit(rng, 3))
    assert store._vectors is index  # appended in place, not dropped
    assert {h.record.id for h in store.search_vector(q, limit=5, scope=TENANT)} == \
        {"r0", "r1", "r2"}
    store.close()
