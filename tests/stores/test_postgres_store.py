"""PostgresStore: the conformance suites against a real PostgreSQL + pgvector, plus migrations,
COPY bulk loads, tenant isolation under random operations, server restarts, and a Session
configured by URL that degrades (never fails) while the server is down."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import numpy as np
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loomctx.errors import ConfigError, StoreError
from loomctx.servers import PostgresServer
from loomctx.session import Session
from loomctx.stores import postgres as pg_module
from loomctx.stores._pg_lexical import narrow_query
from loomctx.stores._pg_postings import DRIFT_SQL
from loomctx.stores._pg_rows import tsvector_literal
from loomctx.stores._pg_schema import SCHEMA_VERSION, migrate
from loomctx.stores._text import tokenizer_id
from loomctx.stores.postgres import PostgresStore
from loomctx.stores.protocol import MemoryRecord, Scope
from loomctx.testing.store_conformance import DIM, ReembedConformance, StoreConformance, rec, unit
from loomctx.testing.store_scope_conformance import ScopeConformance

T = TypeVar("T")


class TestPostgresStore(StoreConformance, ScopeConformance, ReembedConformance):
    @pytest.fixture
    def store(self, pg_url: str) -> Iterator[PostgresStore]:
        s = PostgresStore(pg_url, timeout=10.0)
        yield s
        s.close()


@pytest.fixture
def store(pg_url: str) -> Iterator[PostgresStore]:
    s = PostgresStore(pg_url, timeout=10.0)
    yield s
    s.close()


def _versions(url: str) -> list[int]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT version FROM loomctx_schema_version ORDER BY 1").fetchall()
    return [v for (v,) in rows]


# -- two tenants, random interleaved operations ----------------------------------------------

_TENANTS = ("alpha", "beta")
_WORDS = ("apple", "pear", "river", "山峰", "河流")

_op = st.tuples(
    st.sampled_from(["put", "put", "delete", "level", "cache"]),
    st.sampled_from(_TENANTS),
    st.sampled_from(["r1", "r2", "r3", "r4"]),
    st.sampled_from(_WORDS),
    st.integers(0, DIM - 1),
)


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_op, min_size=1, max_size=25))
def test_two_tenants_never_read_each_other(
    store: PostgresStore, ops: list[tuple[str, str, str, str, int]]
) -> None:
    """A model of each tenant's rows is kept in Python; after every operation each tenant's
    reads (get, scan, count, both searches, the embedding cache) return its own rows only."""
    model: dict[str, dict[str, str]] = {t: {} for t in _TENANTS}
    cache: dict[str, set[str]] = {t: set() for t in _TENANTS}
    try:
        for kind, tenant, rid, word, axis in ops:
            scope = Scope(tenant=tenant)
            if kind == "put":
                text = f"{word} {tenant} note"
                store.put([MemoryRecord(id=rid, content=text, tenant=tenant)],
                          np.stack([unit(*([0.0] * axis), 1.0)]))
                model[tenant][rid] = text
            elif kind == "delete":
                assert store.delete([rid], scope=scope) == int(rid in model[tenant])
                model[tenant].pop(rid, None)
            elif kind == "level":
                store.set_level([rid], "L2", scope=scope)
            else:
                store.cache_vectors("m", {f"{tenant}-{word}": unit(1)}, tenant=tenant)
                cache[tenant].add(f"{tenant}-{word}")
            for t in _TENANTS:
                own = Scope(tenant=t)
                mine = {r.id: r.content for r in store.scan(scope=own)}
                assert mine == model[t]
                assert all(r.tenant == t for r in store.get(["r1", "r2", "r3", "r4"], scope=own))
                assert store.count(scope=own) == len(model[t])
                for w in _WORDS:
                    hits = store.search_lexical(w, scope=own, limit=50)
                    assert {h.record.id for h in hits} == {
                        i for i, c in model[t].items() if c.startswith(w)}
                    assert all(h.record.tenant == t for h in hits)
                dense = store.search_vector(unit(1), scope=own, limit=50)
                assert {h.record.id for h in dense} == set(model[t])
                every = [f"{u}-{w}" for u in _TENANTS for w in _WORDS]
                assert set(store.cached_vectors("m", every, tenant=t)) == cache[t]
    finally:
        for t in _TENANTS:
            store.delete(["r1", "r2", "r3", "r4"], scope=Scope(tenant=t))
        with psycopg.connect(store_url(store), autocommit=True) as conn:
            conn.execute("DELETE FROM loomctx_embedding_cache")


def store_url(store: PostgresStore) -> str:
    info = store._db.pool.conninfo
    assert isinstance(info, str)
    return info


# -- migrations --------------------------------------------------------------------------------

def test_older_schema_is_upgraded_and_reopen_is_idempotent(pg_url: str) -> None:
    with psycopg.connect(pg_url) as conn:
        assert migrate(conn, target=1) == (0, 1)
        conn.execute(
            "INSERT INTO loomctx_records (tenant, agent, session, id, content, level, timestamp, "
            "importance, seq, metadata, content_hash) VALUES ('default', 'a', 's', 'old', "
            "'我喜欢在周末去爬山 with friends', 'L4', 1.0, 0.0, 0, '{}', 'h')"
        )
    assert _versions(pg_url) == [1]
    with PostgresStore(pg_url) as store:
        assert _versions(pg_url) == list(range(1, SCHEMA_VERSION + 1))
        [hit] = store.search_lexical("爬山", scope=Scope())  # the migration indexed old rows
        assert hit.record.id == "old" and hit.record.session == "s"
        store.put([rec("new", "friends again")])
    with PostgresStore(pg_url) as store:
        assert _versions(pg_url) == list(range(1, SCHEMA_VERSION + 1))
        assert {h.record.id for h in store.search_lexical("friends", scope=Scope())} == {
            "old", "new"}


def _indexdef(url: str, name: str) -> str | None:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s",
                           (name,)).fetchone()
    return None if row is None else str(row[0])


def test_version_2_database_gets_the_tenant_keyed_and_ivf_indexes(pg_url: str) -> None:
    """A database left by schema version 2 (GIN over terms alone, HNSW over the vectors) is
    migrated when it opens: both indexes replaced, the old rows searchable through them."""
    with psycopg.connect(pg_url) as conn:
        migrate(conn, target=2)
        conn.execute("INSERT INTO loomctx_meta (key, value) VALUES ('dims', %s)", (str(DIM),))
        conn.execute(f"CREATE INDEX loomctx_records_hnsw ON loomctx_records "
                     f"USING hnsw ((embedding::vector({DIM})) vector_cosine_ops)")
        conn.execute(
            "INSERT INTO loomctx_records (tenant, agent, session, id, content, level, timestamp, "
            "importance, seq, metadata, content_hash, terms, embedding) VALUES ('default', 'a', "
            "'s', 'old', 'river notes', 'L4', 1.0, 0.0, 0, '{}', 'h', %s::tsvector, %s::vector)",
            ("river:1 notes:2", str(unit(1).tolist())))
    assert _indexdef(pg_url, "loomctx_records_hnsw") is not None
    with PostgresStore(pg_url) as store:
        assert _versions(pg_url) == list(range(1, SCHEMA_VERSION + 1))
        assert [h.record.id for h in store.search_vector(unit(1), scope=Scope())] == ["old"]
        assert [h.record.id for h in store.search_lexical("river", scope=Scope())] == ["old"]
    assert _indexdef(pg_url, "loomctx_records_hnsw") is None
    assert "gin (tenant, terms)" in (_indexdef(pg_url, "loomctx_records_terms") or "")
    assert f"ivfflat (((embedding)::halfvec({DIM}))" in (
        _indexdef(pg_url, "loomctx_records_vec") or "")


def test_vector_index_is_rebuilt_when_the_table_outgrows_it(
        pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The IVF index built over the first rows is built again, with more lists, once the
    table holds GROWTH times the rows it was built from."""
    from loomctx.stores import _pg_vector

    monkeypatch.setattr(_pg_vector, "MIN_REBUILD_ROWS", 40)
    monkeypatch.setattr(_pg_vector, "ROWS_PER_LIST", 10)
    monkeypatch.setattr(pg_module, "OUTGROWN_EVERY", 0.0)  # a look after every write
    rng = np.random.default_rng(5)

    def built_from() -> int:
        with psycopg.connect(pg_url) as conn:
            row = conn.execute(
                "SELECT value FROM loomctx_meta WHERE key = 'vector_index_rows'").fetchone()
            conn.execute("ANALYZE loomctx_records")  # what autovacuum does as the table grows
        return int(row[0]) if row else -1

    with PostgresStore(pg_url) as store:
        store.put([rec(f"a{i}") for i in range(5)], rng.normal(size=(5, DIM)))
        assert built_from() == 0  # built by the first write, over no rows yet
        store.put([rec(f"b{i}") for i in range(30)], rng.normal(size=(30, DIM)))
        assert built_from() == 0  # 35 rows: under MIN_REBUILD_ROWS
        store.put([rec(f"c{i}") for i in range(10)], rng.normal(size=(10, DIM)))
        assert built_from() == 0  # the statistics still said 35 rows
        store.put([rec("d")], rng.normal(size=(1, DIM)))
        assert built_from() == 46  # 45 rows known: rebuilt over all 46
        assert "lists='4'" in (_indexdef(pg_url, "loomctx_records_vec") or "")
        store.put([rec(f"e{i}") for i in range(150)], rng.normal(size=(150, DIM)))
        assert built_from() == 46  # 46 rows known, fewer than 4 x 46
        store.put([rec("f")], rng.normal(size=(1, DIM)))
        assert built_from() == 197
        assert "lists='19'" in (_indexdef(pg_url, "loomctx_records_vec") or "")
        probe = rng.normal(size=DIM)
        held = list(store.scan(scope=Scope()))
        assert len(store.search_vector(probe, scope=Scope(), limit=200)) == len(held)


def test_a_write_does_not_wait_for_another_process_rebuilding_the_index(
        pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that finds the index outgrown while another process rebuilds it (holding the
    rebuild's lock, about to take the table for itself) is stored without waiting: waiting
    inside its own write, holding the table, is how two ``serve`` processes deadlocked. The
    next write that looks afterwards rebuilds."""
    from loomctx.stores import _pg_bulk, _pg_vector

    monkeypatch.setattr(_pg_vector, "MIN_REBUILD_ROWS", 40)
    monkeypatch.setattr(pg_module, "OUTGROWN_EVERY", 0.0)
    rng = np.random.default_rng(8)
    failed: list[BaseException] = []

    def write(name: str) -> None:
        try:
            store.put([rec(name)], rng.normal(size=(1, DIM)))
        except BaseException as exc:  # seen by the test, not lost in the thread
            failed.append(exc)

    with PostgresStore(pg_url) as store:
        store.put([rec(f"a{i}") for i in range(60)], rng.normal(size=(60, DIM)))
        with psycopg.connect(pg_url, autocommit=True) as other:
            other.execute("ANALYZE loomctx_records")  # 60 rows known, the index built over 0
            other.execute("SELECT pg_advisory_lock(%s)", (_pg_bulk._INDEX_LOCK,))
            writer = threading.Thread(target=write, args=("b",))
            writer.start()
            writer.join(timeout=5)
            waited = writer.is_alive()
            other.execute("SELECT pg_advisory_unlock(%s)", (_pg_bulk._INDEX_LOCK,))
            writer.join()
            assert not waited, "the write waited for the other process's rebuild"
            assert not failed
            assert other.execute("SELECT value FROM loomctx_meta WHERE key = "
                                 "'vector_index_rows'").fetchone() == ("0",)
            store.put([rec("c")], rng.normal(size=(1, DIM)))
            assert other.execute("SELECT value FROM loomctx_meta WHERE key = "
                                 "'vector_index_rows'").fetchone() == ("62",)
        assert {r.id for r in store.scan(scope=Scope())} >= {"a0", "a59", "b", "c"}


def test_a_failed_rebuild_after_a_write_leaves_the_write_stored(
        pg_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """The look at the index runs after the write committed: when it fails, the records are
    stored all the same, the put returns, and the failure is logged for the next look."""
    from loomctx.stores import _pg_vector

    rng = np.random.default_rng(9)
    with PostgresStore(pg_url) as store:
        store.put([rec("a")], rng.normal(size=(1, DIM)))
        monkeypatch.setattr(pg_module, "OUTGROWN_EVERY", 0.0)

        def broken(conn: psycopg.Connection) -> bool:
            raise psycopg.OperationalError("server closed the connection unexpectedly")

        monkeypatch.setattr(_pg_vector, "outgrown", broken)
        with caplog.at_level("WARNING", logger="loomctx.stores"):
            store.put([rec("b")], rng.normal(size=(1, DIM)))
        assert {r.id for r in store.scan(scope=Scope())} == {"a", "b"}
        assert "vector index was not rebuilt" in caplog.text


def test_the_index_is_looked_at_once_in_a_while_not_after_every_write(
        pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether the table outgrew its index is read after a write with vectors at most once
    per OUTGROWN_EVERY seconds (the estimate it reads moves with autovacuum only)."""
    from loomctx.stores import _pg_vector

    looks: list[int] = []
    real = _pg_vector.outgrown
    monkeypatch.setattr(_pg_vector, "outgrown", lambda conn: (looks.append(1), real(conn))[1])
    rng = np.random.default_rng(6)
    with PostgresStore(pg_url) as store:
        for i in range(5):
            store.put([rec(f"w{i}")], rng.normal(size=(1, DIM)))
        assert len(looks) == 1
        monkeypatch.setattr(pg_module, "OUTGROWN_EVERY", 0.0)
        store.put([rec("x")], rng.normal(size=(1, DIM)))
        store.put([rec("y")], rng.normal(size=(1, DIM)))
        assert len(looks) == 3


def test_new_records_go_in_one_statement_a_replaced_one_in_a_transaction(
        pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A put of records none of which is stored is one INSERT (a transaction of its own);
    one that replaces a record is the delete-and-insert transaction, its vector given anew or
    gone, and a failed first try leaves nothing half written."""
    deletes: list[int] = []
    real = PostgresStore._delete_identities
    monkeypatch.setattr(PostgresStore, "_delete_identities",
                        lambda self, conn, records: (deletes.append(len(records)),
                                                     real(self, conn, records))[1])
    rng = np.random.default_rng(7)
    with PostgresStore(pg_url) as store:
        store.put([rec("a")], rng.normal(size=(1, DIM)))  # sets the dimension: a transaction
        assert deletes == [1]
        store.put([rec("b", "beta"), rec("c", "gamma")], rng.normal(size=(2, DIM)))
        store.put([rec("d", "delta")])
        assert deletes == [1]  # new records: one INSERT each
        store.put([rec("e", "epsilon"), rec("b", "beta again")])  # b is stored: replaced
        assert deletes == [1, 2]
        held = {r.id: r.content for r in store.scan(scope=Scope())}
        assert held == {"a": rec("a").content, "b": "beta again", "c": "gamma", "d": "delta",
                        "e": "epsilon"}
        probe = rng.normal(size=DIM)
        found = {h.record.id for h in store.search_vector(probe, scope=Scope(), limit=10)}
        assert found == {"a", "c"}  # b's old vector went with the record it replaced


def test_large_tenants_get_their_own_vector_index(
        pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build gives each tenant over TENANT_MIN_ROWS (and under TENANT_MAX_SHARE of the rows)
    a partial index of its own rows, which the planner takes for that tenant's searches; the
    others, and a tenant name that needs quoting, are searched as before; a drop removes
    every one."""
    from loomctx.stores import _pg_vector

    monkeypatch.setattr(_pg_vector, "TENANT_MIN_ROWS", 50)
    rng = np.random.default_rng(9)
    sizes = {"it's big": 120, "other": 100, "small": 20}
    records = [rec(f"{t[0]}{i}", tenant=t) for t, n in sizes.items() for i in range(n)]
    vectors = rng.normal(size=(len(records), DIM)).astype(np.float32)
    with PostgresStore(pg_url) as store:
        store.bulk_load(records, vectors)
        with psycopg.connect(pg_url) as conn:
            names = _pg_vector.tenant_indexes(conn)
            assert names == sorted(_pg_vector.tenant_index(t) for t in ("it's big", "other"))
            conn.execute("SET enable_seqscan = off")
            conn.execute(_pg_vector.search_settings())
            plans = {}
            for tenant in sizes:
                qv = _pg_vector.QueryVector(vectors[0])
                plan = conn.execute(
                    f"EXPLAIN SELECT id FROM loomctx_records r WHERE r.tenant = %s "
                    f"ORDER BY {_pg_vector.order_sql(DIM)} LIMIT 5", (tenant, qv)).fetchall()
                plans[tenant] = " ".join(line for (line,) in plan)
            assert _pg_vector.tenant_index("it's big") in plans["it's big"]
            assert _pg_vector.tenant_index("other") in plans["other"]
            assert not any(name in plans["small"] for name in names)
        shared = _indexdef(pg_url, "loomctx_records_vec") or ""
        assert "<> ALL" in shared and "it''s big" in shared and "small" not in shared
        for tenant, n in sizes.items():  # one list per tenant index: exact order
            mine = [i for i, r in enumerate(records) if r.tenant == tenant]
            probe = rng.normal(size=DIM).astype(np.float32)
            unit_rows = vectors[mine] / np.linalg.norm(vectors[mine], axis=1, keepdims=True)
            exact = [records[mine[k]].id for k in
                     np.argsort(-(unit_rows @ (probe / np.linalg.norm(probe))))[:10]]
            got = store.search_vector(probe, scope=Scope(tenant=tenant), limit=10)
            assert [h.record.id for h in got] == exact
            assert len(store.search_vector(probe, scope=Scope(tenant=tenant), limit=n + 5)) == n
        with psycopg.connect(pg_url) as conn:
            _pg_vector.drop(conn)
            assert _pg_vector.tenant_indexes(conn) == []


def test_one_tenant_holding_most_rows_keeps_the_shared_index(
        pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from loomctx.stores import _pg_vector

    monkeypatch.setattr(_pg_vector, "TENANT_MIN_ROWS", 10)
    rng = np.random.default_rng(3)
    records = [rec(f"a{i}") for i in range(60)] + [rec(f"b{i}", tenant="b") for i in range(20)]
    with PostgresStore(pg_url) as store:
        store.bulk_load(records, rng.normal(size=(len(records), DIM)))
    with psycopg.connect(pg_url) as conn:
        assert _pg_vector.tenant_indexes(conn) == [_pg_vector.tenant_index("b")]


def test_probes_must_be_a_positive_int(pg_url: str) -> None:
    for bad in (0, -1, True, "3", 2.5):
        with pytest.raises(ConfigError, match="probes must be an int >= 1"):
            PostgresStore(pg_url, probes=bad)  # type: ignore[arg-type]


def test_binary_copy_writes_what_insert_writes(postgres_server: PostgresServer) -> None:
    """The binary COPY rows (terms and vector encoded in Python) equal the INSERTed ones."""
    texts = ["it's a \\back\\slash and 'quotes'", "我喜欢在周末去爬山 with friends",
             "repeat repeat repeat words", "nul\x00inside", "", "ünïcödé naïve café"]
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(len(texts), DIM)).astype(np.float32)
    records = [rec(f"r{i}", t) for i, t in enumerate(texts)]
    urls = [postgres_server.create_database() for _ in range(2)]
    with PostgresStore(urls[0]) as by_insert, PostgresStore(urls[1]) as by_copy:
        by_insert.put(records, vectors)
        by_copy.bulk_load(records, vectors)
    dumped = []
    for url in urls:
        with psycopg.connect(url) as conn:
            dumped.append(conn.execute(
                "SELECT id, content, content_nul, terms::text, embedding::text "
                "FROM loomctx_records ORDER BY id").fetchall())
    assert dumped[0] == dumped[1]
    assert len(dumped[0]) == len(texts) and dumped[0][1][3]  # terms were written


def test_newer_schema_is_refused(pg_url: str) -> None:
    PostgresStore(pg_url).close()
    with psycopg.connect(pg_url) as conn:
        conn.execute("INSERT INTO loomctx_schema_version (version) VALUES (%s)",
                     (SCHEMA_VERSION + 1,))
    with pytest.raises(StoreError, match="upgrade loomctx"):
        PostgresStore(pg_url)


# -- COPY bulk loads ---------------------------------------------------------------------------

def _batch(n: int, rng: np.random.Generator) -> tuple[list[MemoryRecord], np.ndarray]:
    words = ["river", "mountain", "天气", "北京", "database", "爬山", "tool", "call"]
    records = [
        MemoryRecord(id=f"m{i}", content=" ".join(rng.choice(words, 6).tolist()) + f" {i}",
                     agent="a", session=f"s{i % 3}", timestamp=float(i), seq=i,
                     level="L1" if i % 4 == 0 else "L4", metadata={"i": i})
        for i in range(n)
    ]
    return records, rng.normal(size=(n, DIM)).astype(np.float32)


def _answers(store: PostgresStore, probe: np.ndarray) -> tuple[object, ...]:
    scope = Scope(agent="a", session="s1")
    return (
        list(store.scan(scope=Scope())),
        [(h.record.id, round(h.score, 5)) for h in store.search_lexical("天气 river", scope=scope)],
        [(h.record.id, round(h.score, 5)) for h in store.search_vector(probe, scope=scope)],
        store.count(scope=Scope(), level="L1"),
    )


def test_bulk_load_equals_put(postgres_server: PostgresServer,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(7)
    records, vectors = _batch(300, rng)
    probe = rng.normal(size=DIM)
    urls = [postgres_server.create_database() for _ in range(3)]
    with PostgresStore(urls[0]) as by_put, PostgresStore(urls[1]) as by_copy, \
            PostgresStore(urls[2]) as by_big_put:
        by_put.put([rec("m5", "replaced by the load", agent="a", session="s2")])
        by_copy.put([rec("m5", "replaced by the load", agent="a", session="s2")])
        by_put.put(records, vectors)
        by_copy.bulk_load(records, vectors)
        monkeypatch.setattr(pg_module, "COPY_THRESHOLD", 10)  # put() switches to COPY
        by_big_put.put(records, vectors)
        expected = _answers(by_put, probe)
        assert len(expected[0]) == 300  # type: ignore[arg-type]
        assert _answers(by_copy, probe) == expected
        assert _answers(by_big_put, probe) == expected
        with pytest.raises(ConfigError, match="dimension"):
            by_copy.bulk_load([rec("x")], np.ones((1, DIM + 1)))
    with psycopg.connect(urls[1]) as conn:
        indexes = {n for (n,) in conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename IN "
            "('loomctx_records', 'loomctx_postings')")}
    assert {"loomctx_records_vec", "loomctx_records_terms", "loomctx_postings_key"} <= indexes
    assert _postings_drift(urls[1]) == (0, 0)


def test_reembed_rebuilds_the_index_for_the_new_dimension(pg_url: str) -> None:
    rng = np.random.default_rng(11)
    records, vectors = _batch(120, rng)
    with PostgresStore(pg_url) as store:
        store.put(records, vectors)
        new = rng.normal(size=(120, 5))
        by_text = {r.content: new[i] for i, r in enumerate(records)}
        assert store.reembed(lambda texts: np.stack([by_text[t] for t in texts])) == 120
        assert store.dims == 5
    with PostgresStore(pg_url) as reopened:  # the dimension is the database's, not the object's
        assert reopened.dims == 5
        probe = new[7] / np.linalg.norm(new[7])
        best = reopened.search_vector(probe, scope=Scope(tenant=records[7].tenant), limit=1)
        assert best[0].score == pytest.approx(1.0, abs=1e-5)
    with psycopg.connect(pg_url) as conn:
        (definition,) = conn.execute("SELECT indexdef FROM pg_indexes "
                                     "WHERE indexname = 'loomctx_records_vec'").fetchone()
        (meta,) = conn.execute("SELECT value FROM loomctx_meta WHERE key = 'dims'").fetchone()
    assert "halfvec(5)" in definition and meta == "5"


def test_reembed_while_an_older_transaction_is_open(pg_url: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(12)
    records, vectors = _batch(20, rng)
    new = {r.content: rng.normal(size=5) for r in records}
    monkeypatch.setattr(pg_module, "INDEX_WAIT", 0.5)
    with PostgresStore(pg_url) as store, psycopg.connect(pg_url) as reader:
        store.put(records, vectors)
        reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        # A snapshot older than the re-embedding that holds no lock on the table: the replaced
        # rows are kept for it. (A reader of the table would hold the swap back until it ends.)
        reader.execute("SELECT 1").fetchone()
        with pytest.raises(StoreError, match=r"re-embedded 20 records .* run reembed again"):
            store.reembed(lambda texts: np.stack([new[t] for t in texts]))
        # the new vectors are in and searched (without the index) at the new dimension
        probe = new[records[3].content] / np.linalg.norm(new[records[3].content])
        scope = Scope(agent="a", session=records[3].session)
        assert store.search_vector(probe, scope=scope, limit=1)[0].record.id == "m3"
        reader.execute("COMMIT")
        assert store.reembed(lambda texts: np.stack([new[t] for t in texts])) == 20
    with psycopg.connect(pg_url) as conn:
        (definition,) = conn.execute("SELECT indexdef FROM pg_indexes "
                                     "WHERE indexname = 'loomctx_records_vec'").fetchone()
    assert "halfvec(5)" in definition


def test_cli_reembeds_a_postgres_store_and_prints_no_credentials(
    pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from loomctx.cli.main import main
    from loomctx.embed import HashingEmbedder

    rng = np.random.default_rng(13)
    records, vectors = _batch(30, rng)
    with PostgresStore(pg_url) as store:
        store.put(records, vectors)
    assert main(["store", "reembed", pg_url, "--embedder", "hashing"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("re-embedded 30 records of 127.0.0.1:")
    credentials = pg_url.split("://", 1)[1].split("@", 1)[0] + "@"
    assert "postgresql://" not in out and credentials not in out
    with PostgresStore(pg_url) as store:
        assert store.dims == HashingEmbedder().dim
        probe = HashingEmbedder().embed([records[4].content])[0]
        scope = Scope(agent="a", session=records[4].session)
        assert store.search_vector(probe, scope=scope, limit=1)[0].record.id == "m4"


# -- restarts and outages ----------------------------------------------------------------------

def test_pool_recovers_after_restart(postgres_server: PostgresServer, pg_url: str) -> None:
    with PostgresStore(pg_url, timeout=10.0) as store:
        store.put([rec("before", "kept across the crash")], np.stack([unit(1)]))
        postgres_server.kill()
        postgres_server.start()
        assert store.get(["before"], scope=Scope())[0].content == "kept across the crash"
        store.put([rec("after")], np.stack([unit(0, 1)]))
        assert store.count(scope=Scope()) == 2


def test_outage_raises_store_error(postgres_server: PostgresServer, pg_url: str) -> None:
    with PostgresStore(pg_url, timeout=1.0, connect_timeout=1) as store:
        store.put([rec("a")])
        postgres_server.kill()
        try:
            err = wait_for_outage(store)
            assert re.search(r"PostgreSQL at 127\.0\.0\.1:\d+/t_\w+", str(err))
            assert not isinstance(err, psycopg.Error)
            with pytest.raises(StoreError, match="server"):
                store.put([rec("b")])
        finally:
            postgres_server.start()
        assert _eventually(lambda: store.count(scope=Scope())) == 1


def wait_for_outage(store: PostgresStore, within: float = 30.0) -> StoreError:
    """The StoreError of the first operation that fails after the server was killed.

    Its backends exit when they notice the postmaster is gone, not at once: a connection may
    answer for a moment longer, so the test waits for the first failure (and fails without it).
    """
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            store.count(scope=Scope())
        except StoreError as e:
            return e
        time.sleep(0.05)
    raise AssertionError(f"no StoreError within {within} s of killing the server")


def _eventually(call: Callable[[], T], within: float = 30.0) -> T:
    """``call()`` once the pool has reconnected (its reconnection backs off while it waits)."""
    deadline = time.monotonic() + within
    while True:
        try:
            return call()
        except StoreError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_opening_an_unreachable_server_raises_store_error() -> None:
    from loomctx.servers import free_port

    url = f"postgresql://postgres@127.0.0.1:{free_port()}/nothing"
    with pytest.raises(StoreError, match=r"cannot connect to PostgreSQL at 127\.0\.0\.1"):
        PostgresStore(url, timeout=0.5, connect_timeout=1)


# -- a Session over PostgreSQL ------------------------------------------------------------
def test_session_from_url_writes_to_postgres(make_session: Callable[..., Session],
                                             pg_url: str) -> None:
    session = make_session(id="s1", agent="helper", store=pg_url)
    assert isinstance(session.store, PostgresStore)
    session.add_message_sync("user", "我喜欢在周末去爬山")
    with PostgresStore(pg_url) as other:  # another process would see the same rows
        [record] = other.scan(scope=Scope(agent="helper", session="s1"))
    assert record.content == "我喜欢在周末去爬山"


def test_build_during_outage_degrades_and_names_the_source(
        make_session: Callable[..., Session], postgres_server: PostgresServer,
        pg_url: str) -> None:
    store = PostgresStore(pg_url, timeout=1.0, connect_timeout=1)
    session = make_session(id="s1", store=store)
    for i in range(4):
        session.add_message_sync("user", f"note {i}: the river rises in spring")
    postgres_server.kill()
    try:
        wait_for_outage(store)
        result = session.build_sync("when does the river rise?", max_tokens=2000)
    finally:
        postgres_server.start()
    failed = {s.name: s.error for s in result.report.failed_sources}
    # Every source that reads the store is named (the session's recall, the agent's memory
    # and the shared L2 pool); the history, in the session, is not.
    assert "L4_semantic" in failed and set(failed) <= {"L4_semantic", "L3_agent", "L2_shared"}
    assert failed["L4_semantic"].startswith("SourceError: memory store unavailable: PostgreSQL")
    # History lives in the session, so the conversation is still all there.
    texts = [m["content"] for m in result.payload["messages"]]
    assert [t for t in texts if t.startswith("note ")] == [
        f"note {i}: the river rises in spring" for i in range(4)]
    assert texts[-1] == "when does the river rise?"


def test_store_over_a_callers_pool(pg_url: str) -> None:
    """A pool the caller owns (transactional connections, no settings of ours) works the same
    and stays open when the store closes."""
    from psycopg_pool import ConnectionPool

    with ConnectionPool(pg_url, min_size=1, max_size=2, open=True) as pool:
        with PostgresStore(pool) as store:
            store.put([rec("a", "river notes"), rec("b", "山峰")],
                      np.stack([unit(1), unit(0, 1)]))
            assert [h.record.id for h in store.search_vector(unit(1), scope=Scope())] == [
                "a", "b"]
            assert [h.record.id for h in store.search_lexical("山峰", scope=Scope())] == ["b"]
        with pool.connection() as conn:
            assert conn.execute("SELECT COUNT(*) FROM loomctx_records").fetchone() == (2,)


# -- lexical search bounded by term statistics -------------------------------------------------
# A narrower scope than the tenant (here: a level) ranks through the GIN index in bounded
# stages; a tenant-wide search ranks from the postings (tests further below).

def _lexical_corpus() -> list[MemoryRecord]:
    """Common words (alpha in half the texts, beta in a third, 上下文 in a quarter), one rare
    word, and filler of varied length, so ranks differ by matched terms and by length."""
    out = []
    for i in range(600):
        words = [f"w{i}"] * (1 + i % 7)
        words += ["alpha"] * (i % 2 == 0) + ["beta"] * (i % 3 == 0) + ["zeta"] * (i % 100 == 7)
        words += ["上下文"] * (i % 4 == 0) + ["模型"] * (i % 5 == 0)
        out.append(rec(f"r{i}", " ".join(words)))
    return out


@contextmanager
def _bounded_and_exact(pg_url: str, budget: int, query: str
                       ) -> Iterator[tuple[PostgresStore, PostgresStore, list[str], list[float]]]:
    """A store with ``lexical_budget=budget`` over the lexical corpus and one ranking every
    match, with ``query``'s terms and their estimated row counts (loading analyses the table,
    so the statistics exist)."""
    with PostgresStore(pg_url, lexical_budget=budget) as fast, \
            PostgresStore(pg_url, lexical_budget=None) as exact:
        fast.bulk_load(_lexical_corpus())
        terms = pg_module.query_terms(query)
        estimates = fast._term_stats.estimates(terms)
        assert estimates is not None
        yield fast, exact, terms, estimates


@pytest.mark.parametrize(("query", "limit"), [("alpha beta zeta", 20), ("上下文 模型 alpha", 20),
                                              ("上下文 模型 alpha", 150), ("上下文 模型 beta", 90)])
def test_bounded_lexical_search_ranks_as_the_full_one(pg_url: str, query: str,
                                                      limit: int) -> None:
    """With a small budget the first stage runs and fills ``limit`` (from fewer rows than its
    bound): the scores are those of ranking every match, and so are the ids above the lowest
    score (rows tied at the cut may differ)."""
    budget = 100
    with PostgresStore(pg_url, lexical_budget=budget) as fast, \
            PostgresStore(pg_url, lexical_budget=None) as exact:
        fast.bulk_load(_lexical_corpus())  # analyses the table: the statistics exist
        terms = pg_module.query_terms(query)
        estimates = fast._term_stats.estimates(terms)
        assert estimates is not None and sum(estimates) > budget
        narrow = narrow_query(terms, estimates, budget)
        assert narrow is not None
        with psycopg.connect(pg_url) as conn:
            [(matched,)] = conn.execute("SELECT COUNT(*) FROM loomctx_records "
                                        "WHERE terms @@ %s::tsquery", (narrow,)).fetchall()
        assert limit <= matched <= pg_module.lex.stage_rows(budget, limit)
        narrowed = fast.search_lexical(query, scope=Scope(), limit=limit, level="L4")
        full = exact.search_lexical(query, scope=Scope(), limit=limit)
        assert [round(h.score, 6) for h in narrowed] == [round(h.score, 6) for h in full]
        cut = full[-1].score
        assert {h.record.id for h in narrowed if h.score > cut + 1e-9} == {
            h.record.id for h in full if h.score > cut + 1e-9}


@pytest.mark.parametrize(("query", "limit"), [("beta zeta", 20), ("beta zeta", 150),
                                              ("alpha beta zeta", 150),
                                              ("alpha beta zeta", 400),
                                              ("上下文 模型 alpha", 300)])
def test_lexical_fallback_ranks_a_bounded_set(pg_url: str, query: str, limit: int) -> None:
    """When the first stage cannot fill ``limit`` (too few rows, or one common word and
    nothing to pair with it), the list is the best of the first stage's rows (every one of
    them ranked) and of the first ``stage_rows`` matches in table order: at most that
    many rows are ranked, never every match, and each keeps its exact score."""
    budget = 5
    with _bounded_and_exact(pg_url, budget, query) as (fast, exact, terms, estimates):
        first = narrow_query(terms, estimates, budget) or \
            pg_module.lex.rare_query(terms, estimates, budget)
        assert first is not None
        every = {h.record.id: h.score for h in exact.search_lexical(query, scope=Scope(),
                                                                    limit=600)}
        with psycopg.connect(pg_url) as conn:
            kept = [i for (i,) in conn.execute("SELECT id FROM loomctx_records WHERE terms @@ "
                                               "%s::tsquery", (first,)).fetchall()]
            in_order = [i for (i,) in conn.execute(
                "SELECT id FROM loomctx_records WHERE terms @@ %s::tsquery ORDER BY ctid "
                "LIMIT %s", (pg_module.tsquery_of(terms),
                              pg_module.lex.stage_rows(budget, limit))).fetchall()]
        assert len(kept) < limit < len(every)  # the fallback runs, and a bound can bite
        ranked = set(kept) | set(in_order)
        want = sorted(ranked, key=lambda i: (-every[i], i))[:limit]
        got = fast.search_lexical(query, scope=Scope(), limit=limit, level="L4")
        assert len(got) <= limit
        assert [h.record.id for h in got] == want
        assert all(abs(h.score - every[h.record.id]) < 1e-6 for h in got)
        if len(every) > len(ranked):  # some matches were never ranked: the list differs
            best = sorted(every, key=lambda i: (-every[i], i))[:limit]
            assert [h.record.id for h in got] != best


def test_lexical_first_stage_ranks_a_bounded_set(pg_url: str) -> None:
    """A first stage matching more rows than its bound ranks only the first ``stage_rows``
    of them (in table order) and returns the best of those when they fill ``limit``."""
    budget, limit, query = 10, 20, "上下文 模型 alpha"
    with _bounded_and_exact(pg_url, budget, query) as (fast, exact, terms, estimates):
        narrow = narrow_query(terms, estimates, budget)
        assert narrow is not None
        cap = pg_module.lex.stage_rows(budget, limit)
        every = {h.record.id: h.score for h in exact.search_lexical(query, scope=Scope(),
                                                                    limit=600)}
        with psycopg.connect(pg_url) as conn:
            [(matched,)] = conn.execute("SELECT COUNT(*) FROM loomctx_records WHERE terms @@ "
                                        "%s::tsquery", (narrow,)).fetchall()
            read = [i for (i,) in conn.execute(
                "SELECT id FROM loomctx_records WHERE terms @@ %s::tsquery ORDER BY ctid "
                "LIMIT %s", (narrow, cap)).fetchall()]
        assert matched > cap >= limit  # the bound bites
        got = fast.search_lexical(query, scope=Scope(), limit=limit, level="L4")
        assert [h.record.id for h in got] == sorted(read, key=lambda i: (-every[i], i))[:limit]
        assert all(abs(h.score - every[h.record.id]) < 1e-6 for h in got)


def test_narrow_query_pairs_common_words_and_keeps_rare_ones() -> None:
    assert narrow_query(["a", "b"], [5.0, 5.0], budget=100) is None  # cheap: rank every match
    q = narrow_query(["上下文", "上下", "模型", "检索", "zz"], [900, 900, 800, 700, 3], budget=100)
    assert q is not None
    assert "'zz'" in q.split(" | ")
    assert "'上下'" not in q  # part of 上下文: pairing it would match every row of the word
    assert "'模型' & '上下文'" in q and "'检索' & '模型'" in q
    assert "'上下文'" in q.split(" | ")  # its rows match three terms: it outranks a pair
    # nothing to pair, but the word stands for three terms: its rows are the first stage
    assert narrow_query(["上下文", "上下", "zz"], [900, 900, 3], budget=100) == "'zz' | '上下文'"
    assert narrow_query(["模型", "zz"], [900, 3], budget=100) is None
    # nothing to pair: the rare terms are still ranked before the bounded rest
    assert pg_module.lex.rare_query(["上下文", "上下", "zz"], [900, 900, 3], budget=100) == "'zz'"
    assert pg_module.lex.rare_query(["a", "b"], [5.0, 5.0], budget=100) is None  # cheap


@pytest.mark.parametrize("bad", [-1, 1.5, True, "10"])
def test_lexical_budget_is_checked(pg_url: str, bad: object) -> None:
    with pytest.raises(ConfigError, match="lexical_budget"):
        PostgresStore(pg_url, lexical_budget=bad)  # type: ignore[arg-type]


# -- tenant-wide lexical search from impact-ordered postings -----------------------------------

def _postings_drift(url: str) -> tuple[int, int]:
    """(postings missing, postings stale): the table against the impacts of the stored rows."""
    with psycopg.connect(url) as conn:
        [(missing, stale)] = conn.execute(DRIFT_SQL).fetchall()
    return int(missing), int(stale)


def test_postings_follow_every_write(pg_url: str) -> None:
    """put (INSERT and COPY), replacing a record, delete, a bulk load that rebuilds the
    indexes and re-tokenizing each leave exactly one posting per term of every stored row."""
    with PostgresStore(pg_url) as store:
        store.put([rec("a", "river stones 河流"), rec("b", "river river bank", tenant="t2")])
        store.put([rec(f"c{i}", f"copy {i} river") for i in range(pg_module.COPY_THRESHOLD)])
        store.put([rec("a", "a new text about mountains 山峰")])  # replaced: old terms gone
        assert store.delete(["c1", "c2"], scope=Scope()) == 2
        store.bulk_load([rec(f"d{i}", f"bulk {i} 山峰") for i in range(50)], rebuild_index=True)
        store.put(_lexical_corpus()[:60])  # repeated terms, rows of every length, CJK grams
        assert _postings_drift(pg_url) == (0, 0)
        assert store.delete([f"r{i}" for i in range(0, 60, 2)], scope=Scope()) == 30
        with psycopg.connect(pg_url) as conn:
            n = conn.execute("SELECT COUNT(*) FROM loomctx_postings WHERE term = 'river'"
                             ).fetchone()
            assert n is not None and n[0] == pg_module.COPY_THRESHOLD - 2 + 1  # b's: once
        assert [h.record.id for h in store.search_lexical("mountains", scope=Scope())] == ["a"]
        assert store.search_lexical("stones", scope=Scope()) == []
    with psycopg.connect(pg_url) as conn:  # a new tokenizer: every terms value is rewritten
        conn.execute("UPDATE loomctx_meta SET value = 'older' WHERE key = 'tokenizer'")
        conn.execute("UPDATE loomctx_records SET terms = ''::tsvector WHERE id = 'b'")
        conn.execute("UPDATE loomctx_records SET level = 'L2' WHERE id = 'a'")  # terms kept
    assert _postings_drift(pg_url) == (0, 0)
    with PostgresStore(pg_url) as store:
        assert _postings_drift(pg_url) == (0, 0)
        assert [h.record.id for h in store.search_lexical("bank", scope=Scope(tenant="t2"))
                ] == ["b"]


def test_version_3_database_gets_postings_of_its_rows(pg_url: str) -> None:
    with psycopg.connect(pg_url) as conn:
        migrate(conn, target=3)
        conn.execute(
            "INSERT INTO loomctx_records (tenant, agent, session, id, content, level, timestamp, "
            "importance, seq, metadata, content_hash, terms) VALUES ('default', 'a', 's', 'old', "
            "'river notes', 'L4', 1.0, 0.0, 0, '{}', 'h', %s::tsvector)",
            (tsvector_literal("river notes"),))
        conn.execute("INSERT INTO loomctx_meta (key, value) VALUES ('tokenizer', %s)",
                     (tokenizer_id(),))
    with PostgresStore(pg_url) as store:
        assert _versions(pg_url) == list(range(1, SCHEMA_VERSION + 1))
        assert _postings_drift(pg_url) == (0, 0)
        assert [h.record.id for h in store.search_lexical("river", scope=Scope())] == ["old"]


def test_impacts_add_up_to_ts_rank(pg_url: str) -> None:
    """A row's impacts of the query terms it holds, summed and divided by the query's term
    count, are its ``ts_rank(terms, q, 1)``: repeated terms, long and short rows, CJK grams."""
    query = "alpha beta 上下文 zeta w3"
    terms = pg_module.query_terms(query)
    with PostgresStore(pg_url) as store, psycopg.connect(pg_url) as conn:
        store.put(_lexical_corpus()[:120])
        rows = conn.execute(
            "SELECT r.id, ts_rank(r.terms, %s::tsquery, 1), "
            "(SELECT COALESCE(SUM(i.impact), 0) FROM loomctx_impacts(r.terms) i "
            " WHERE i.term = ANY(%s)) / %s FROM loomctx_records r",
            (pg_module.tsquery_of(terms), terms, len(terms))).fetchall()
    assert len(rows) == 120 and any(rank > 0 for _, rank, _ in rows)
    for _, rank, summed in rows:
        assert abs(rank - summed) <= 1e-6 * max(rank, 1e-9)


@pytest.mark.parametrize(("query", "limit"), [("alpha beta zeta", 20), ("上下文 模型 alpha", 20),
                                              ("上下文 模型 alpha", 150), ("上下文 模型 beta", 90),
                                              ("beta zeta", 400), ("w1 alpha", 5)])
def test_tenant_wide_search_ranks_as_every_match_ranked(pg_url: str, query: str,
                                                        limit: int) -> None:
    """While no term holds more postings than its cap, the tenant-wide list is the one of
    ranking every match: the same scores, the same ids above the lowest score; the other
    tenant's rows never enter."""
    budget = 200  # cap: 800 postings per term, more than any term of the corpus holds
    with PostgresStore(pg_url, lexical_budget=budget) as fast, \
            PostgresStore(pg_url, lexical_budget=None) as exact:
        fast.bulk_load(_lexical_corpus())
        fast.put([rec(f"o{i}", "alpha beta zeta 上下文 模型", tenant="other") for i in range(50)])
        got = fast.search_lexical(query, scope=Scope(), limit=limit)
        full = exact.search_lexical(query, scope=Scope(), limit=limit)
        assert len(got) == len(full) > 0
        assert [round(h.score, 6) for h in got] == [round(h.score, 6) for h in full]
        cut = full[-1].score
        assert {h.record.id for h in got if h.score > cut + 1e-9} == {
            h.record.id for h in full if h.score > cut + 1e-9}
        assert all(h.record.tenant == "default" for h in got)


def test_tenant_wide_search_reads_each_terms_best_postings_up_to_its_cap(pg_url: str) -> None:
    """When a term holds more rows than its cap, only its best-impact postings are read: a
    row outside every term's cap is never returned, and every returned score is exact."""
    budget, limit, query = 10, 20, "alpha beta"  # cap 40 postings a term; 300 and 200 rows
    with PostgresStore(pg_url, lexical_budget=budget) as fast, \
            PostgresStore(pg_url, lexical_budget=None) as exact:
        fast.bulk_load(_lexical_corpus())
        cap = pg_module.lex.stage_rows(budget, limit)
        every = {h.record.id: h.score for h in exact.search_lexical(query, scope=Scope(),
                                                                    limit=600)}
        with psycopg.connect(pg_url) as conn:
            read = {i for (i,) in conn.execute(
                "SELECT r.id FROM unnest(%s::text[]) t(term) CROSS JOIN LATERAL ("
                "SELECT pk FROM loomctx_postings p WHERE p.tenant = 'default' "
                "AND p.term = t.term ORDER BY p.impact DESC LIMIT %s) p "
                "JOIN loomctx_records r ON r.pk = p.pk", (["alpha", "beta"], cap)).fetchall()}
        assert len(every) > len(read) >= limit  # the cap bites
        got = fast.search_lexical(query, scope=Scope(), limit=limit)
        assert len(got) == limit and {h.record.id for h in got} <= read
        assert all(abs(h.score - every[h.record.id]) < 1e-6 for h in got)
        assert [h.score for h in got] == sorted((h.score for h in got), reverse=True)


@pytest.mark.parametrize("budget", [None, 100])
def test_rows_tied_at_the_cut_are_kept_by_id(pg_url: str, budget: int | None) -> None:
    """Which of the rows tied at the cut a list keeps does not depend on the scan order: the
    smallest ids, as the store orders its hits (ranking every match, and from the postings
    while the tied rows number at most ``TIE_FACTOR`` lists)."""
    with PostgresStore(pg_url, lexical_budget=budget) as store:
        store.put([rec(f"t{i:03d}", "same words here") for i in reversed(range(30))])
        store.put([rec("best", "words words")])
        got = store.search_lexical("words", scope=Scope(), limit=10)
    assert [h.record.id for h in got] == ["best", *(f"t{i:03d}" for i in range(9))]
