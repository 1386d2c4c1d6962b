"""The scoping half of the store contract: one scope never reads another's records.

:class:`~loomctx.testing.store_conformance.StoreConformance` inherits :class:`ScopeConformance`,
so every backend runs these tests by overriding the one ``store`` fixture. They hold design
guarantee 8: every stored record belongs to one scope (tenant, agent, session), no operation reads
or changes a record outside the scope it was given, and the same caller id in two sessions is two
records. The property test draws random records in random scopes and checks every operation
against :meth:`Scope.covers`, the written definition.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loomctx.errors import ConfigError
from loomctx.stores.protocol import MemoryRecord, MemoryStore, Scope

_DIM = 8
_WORDS = ("harbor", "violet", "quartz", "meadow")
"""Query words: none is a substring of another, so lexical matches are exactly the records
that contain the word."""

# The record scopes of the property test: tenant-global, agent-level and session records in two
# tenants, and one session name ("s1") that two agents both use.
_SCOPES = [
    Scope(tenant=t, agent=a, session=s)
    for t in ("default", "acme")
    for a, s in ((None, None), ("a1", None), ("a1", "s1"), ("a1", "s2"), ("a2", None), ("a2", "s1"))
]
_QUERY_SCOPES = [*_SCOPES, Scope(tenant="nobody"), Scope(tenant="acme", agent="a3")]


def _vec(*values: float) -> np.ndarray:
    v = np.zeros(_DIM, dtype=np.float32)
    v[: len(values)] = values
    return v / np.linalg.norm(v)


def _in(scope: Scope, id: str, content: str = "", **fields: object) -> MemoryRecord:
    return MemoryRecord(
        id=id, content=content or f"text of {id}", tenant=scope.tenant, agent=scope.agent,
        session=scope.session, **fields,  # type: ignore[arg-type]
    )


def _key(r: MemoryRecord) -> tuple[str, str | None, str | None, str]:
    return (r.tenant, r.agent, r.session, r.id)


S1 = Scope(agent="planner", session="s1")
S2 = Scope(agent="planner", session="s2")
PLANNER = Scope(agent="planner")
OTHER_TENANT = Scope(tenant="acme", agent="planner", session="s1")


class ScopeConformance:
    """Scoping tests every :class:`MemoryStore` backend inherits (through StoreConformance)."""

    @pytest.fixture
    def store(self) -> Iterator[MemoryStore]:
        raise NotImplementedError("override the `store` fixture with a fresh, empty store")

    def test_same_id_in_two_sessions_is_two_records(self, store: MemoryStore) -> None:
        store.put([_in(S1, "m1", "first session says hello")], np.stack([_vec(1)]))
        store.put([_in(S2, "m1", "second session says hello")], np.stack([_vec(0, 1)]))
        store.put([_in(OTHER_TENANT, "m1", "another tenant says hello")], np.stack([_vec(1)]))
        assert [r.content for r in store.get(["m1"], scope=S1)] == ["first session says hello"]
        assert [r.content for r in store.get(["m1"], scope=S2)] == ["second session says hello"]
        assert [r.session for r in store.get(["m1"], scope=PLANNER)] == ["s1", "s2"]
        assert store.count(scope=Scope()) == 2
        assert store.count(scope=Scope(tenant="acme")) == 1
        # Putting the same identity again replaces only that record.
        store.put([_in(S1, "m1", "first session, edited")])
        assert [r.content for r in store.get(["m1"], scope=PLANNER)] == [
            "first session, edited", "second session says hello"
        ]
        assert store.count(scope=PLANNER) == 2

    def test_wider_scopes_reach_agent_and_tenant_records(self, store: MemoryStore) -> None:
        store.put([
            _in(Scope(), "tenant-note", timestamp=1.0),
            _in(PLANNER, "agent-summary", timestamp=2.0),
            _in(S1, "msg", timestamp=3.0),
            _in(Scope(agent="critic", session="s1"), "msg", timestamp=4.0),
        ])

        def ids(scope: Scope) -> list[tuple[str | None, str]]:
            return [(r.agent, r.id) for r in store.scan(scope=scope)]

        assert ids(S1) == [("planner", "msg")]
        assert ids(PLANNER) == [("planner", "agent-summary"), ("planner", "msg")]
        assert ids(Scope()) == [
            (None, "tenant-note"), ("planner", "agent-summary"), ("planner", "msg"),
            ("critic", "msg"),
        ]
        assert ids(Scope(tenant="acme")) == []

    def test_writes_stay_in_their_scope(self, store: MemoryStore) -> None:
        store.put([_in(S1, "m1", "apples"), _in(S2, "m1", "apples")],
                  np.stack([_vec(1), _vec(1, 0.1)]))
        store.set_level(["m1"], "L2", scope=S1)
        assert [r.level for r in store.get(["m1"], scope=PLANNER)] == ["L2", "L4"]
        assert store.delete(["m1"], scope=S2) == 1
        assert store.delete(["m1"], scope=OTHER_TENANT) == 0
        assert [r.session for r in store.get(["m1"], scope=PLANNER)] == ["s1"]
        assert [h.record.session for h in store.search_vector(_vec(1), scope=PLANNER)] == ["s1"]
        assert [h.record.session for h in store.search_lexical("apples", scope=PLANNER)] == [
            "s1"
        ]
        assert store.delete(["m1"], scope=PLANNER) == 1
        assert store.count(scope=Scope()) == 0

    def test_searches_stay_in_their_scope(self, store: MemoryStore) -> None:
        text = "the shipment is on customs hold at Lyon"
        store.put([_in(S1, "a", text), _in(OTHER_TENANT, "a", text), _in(S2, "b", text)],
                  np.stack([_vec(1), _vec(1), _vec(1)]))
        for scope, expected in ((S1, {"s1"}), (S2, {"s2"}), (PLANNER, {"s1", "s2"})):
            lexical = store.search_lexical("customs Lyon", scope=scope)
            dense = store.search_vector(_vec(1), scope=scope)
            for hits in (lexical, dense):
                assert {h.record.session for h in hits} == expected
                assert {h.record.tenant for h in hits} == {"default"}
        assert [h.record.tenant for h in store.search_vector(_vec(1), scope=OTHER_TENANT)] == [
            "acme"
        ]

    def test_embedding_cache_is_per_tenant(self, store: MemoryStore) -> None:
        store.cache_vectors("model", {"h": _vec(1)}, tenant="default")
        assert set(store.cached_vectors("model", ["h"], tenant="default")) == {"h"}
        assert store.cached_vectors("model", ["h"], tenant="acme") == {}
        store.cache_vectors("model", {"h": _vec(0, 1)}, tenant="acme")
        mine = store.cached_vectors("model", ["h"], tenant="default")["h"]
        np.testing.assert_array_equal(mine, _vec(1))
        with pytest.raises(ConfigError):
            store.cached_vectors("model", ["h"], tenant="")

    def test_bad_scopes_are_caller_errors(self, store: MemoryStore) -> None:
        with pytest.raises(ConfigError, match="agent"):
            Scope(session="s1")
        for bad in ({"tenant": ""}, {"agent": ""}, {"tenant": None}, {"agent": 7}):
            with pytest.raises(ConfigError):
                Scope(**bad)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="Scope"):
            store.get(["a"], scope="s1")  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="Scope"):
            store.count(scope=None)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            store.scan()  # type: ignore[call-arg]
        with pytest.raises(ConfigError, match="agent"):
            store.put([MemoryRecord(id="x", content="orphan", session="s1")])
        with pytest.raises(ConfigError, match="tenant"):
            store.put([MemoryRecord(id="x", content="no tenant", tenant="")])
        assert store.count(scope=Scope()) == 0

    def test_duplicate_identity_in_one_put_is_refused(self, store: MemoryStore) -> None:
        with pytest.raises(ConfigError, match="m1"):
            store.put([_in(S1, "m1"), _in(S2, "m1"), _in(S1, "m1")])
        assert store.count(scope=Scope()) == 0

    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.differing_executors,
        ],
    )
    @given(
        rows=st.lists(
            st.tuples(
                st.sampled_from(["m1", "m2", "m3"]),
                st.integers(0, len(_SCOPES) - 1),
                st.sampled_from(_WORDS),
                st.floats(-1, 1, allow_nan=False),
            ),
            max_size=24,
            unique_by=lambda row: (row[0], row[1]),
        ),
        write_scope=st.sampled_from(_QUERY_SCOPES),
        delete_scope=st.sampled_from(_QUERY_SCOPES),
    )
    def test_no_operation_crosses_a_scope(
        self, store: MemoryStore, rows: list[tuple[str, int, str, float]], write_scope: Scope,
        delete_scope: Scope,
    ) -> None:
        records = [
            _in(_SCOPES[s], rid, f"{word} note {i}", timestamp=float(i % 5), seq=i)
            for i, (rid, s, word, _) in enumerate(rows)
        ]
        vectors = np.stack([_vec(1, y, 0.5) for *_, y in rows]) if rows else None
        store.put(records, vectors)
        ids = ["m1", "m2", "m3", "unknown"]
        try:
            for scope in _QUERY_SCOPES:
                seen = [r for r in records if scope.covers(r)]
                keys = {_key(r) for r in seen}
                assert {_key(r) for r in store.scan(scope=scope)} == keys
                assert store.count(scope=scope) == len(seen)
                got = store.get(ids, scope=scope)
                assert len(got) == len(seen) and {_key(r) for r in got} == keys
                dense = store.search_vector(_vec(1), scope=scope, limit=100)
                assert {_key(h.record) for h in dense} == keys
                for word in _WORDS:
                    lexical = store.search_lexical(word, scope=scope, limit=100)
                    expected = {_key(r) for r in seen if r.content.startswith(word)}
                    assert {_key(h.record) for h in lexical} == expected
            store.set_level(ids, "L1", scope=write_scope)
            moved = {_key(r) for r in records if write_scope.covers(r)}
            everything = [r for t in ("default", "acme") for r in store.scan(scope=Scope(tenant=t))]
            assert {_key(r) for r in everything if r.level == "L1"} == moved
            for scope in _QUERY_SCOPES:
                expected_l1 = sum(scope.covers(r) and _key(r) in moved for r in records)
                assert store.count(scope=scope, level="L1") == expected_l1
            doomed = {_key(r) for r in records if delete_scope.covers(r)}
            assert store.delete(ids, scope=delete_scope) == len(doomed)
            left = {_key(r) for t in ("default", "acme") for r in store.scan(scope=Scope(tenant=t))}
            assert left == {_key(r) for r in records} - doomed
        finally:
            for tenant in ("default", "acme"):
                store.delete(ids, scope=Scope(tenant=tenant))


__all__ = ["ScopeConformance"]
