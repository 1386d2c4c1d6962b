"""PostgresStore: the conformance suites against a real PostgreSQL + pgvector, plus migrations,
COPY bulk loads, tenant isolation under random operations, and server restarts."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from loomctx.stores.postgres import PostgresStore
from loomctx.testing.store_conformance import StoreConformance
from loomctx.testing.store_scope_conformance import ScopeConformance


class TestPostgresStore(StoreConformance, ScopeConformance):
    @pytest.fixture
    def store(self, pg_url: str) -> Iterator[PostgresStore]:
        s = PostgresStore(pg_url, timeout=10.0)
        yield s
        s.close()
