"""The cross-agent shared pool: agents of one tenant write, every agent of it reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from loomctx import HashingEmbedder, Session, SQLiteStore
from loomctx.errors import ConfigError
from loomctx.retrieval.pool import SharedPool
from loomctx.stores import InMemoryStore, Scope

FINDING = "The Lyon depot has a customs hold on every shipment from Basel this week."
QUESTION = "Why is the Basel shipment held in Lyon?"


def text_of(session: Session) -> str:
    result = session.build_sync(QUESTION, max_tokens=800)
    return "\n".join(str(m["content"]) for m in result.messages)


def test_one_agent_writes_another_reads_another_tenant_does_not(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "pool.db")
    emb = HashingEmbedder()
    acme, globex = (SharedPool(store, emb, tenant=t) for t in ("acme", "globex"))
    eid = acme.write(FINDING, by="researcher", importance=0.9)

    writer = Session("w1", agent="writer", tenant="acme", store=store, embedder=emb,
                     sources=[acme.source(reader="writer")])
    assert FINDING in text_of(writer)
    [row] = [i for i in writer.build_sync(QUESTION, max_tokens=800).report.items
             if i.source == "shared_pool"]
    assert row.included

    # the same agent and pool name in another tenant: nothing
    other = Session("w1", agent="writer", tenant="globex", store=store, embedder=emb,
                    sources=[globex.source(reader="writer")])
    assert FINDING not in text_of(other)
    assert globex.entries() == []

    # an agent's own memory scope does not hold pool entries
    assert store.get([eid], scope=Scope(tenant="acme", agent="writer")) == []
    assert [r.metadata["by"] for r in acme.entries()] == ["researcher"]
    store.close()


def test_several_writers_and_include_own() -> None:
    store, emb = InMemoryStore(), HashingEmbedder()
    pool = SharedPool(store, emb, tenant="acme", name="ops")
    pool.write("Basel shipments are held in Lyon for customs.", by="researcher", id="a")
    pool.write("Customers of held Basel shipments get a refund voucher.", by="support", id="b")
    everyone = pool.source(reader="support")
    others = pool.source(reader="support", include_own=False, name="others")
    assert [r.id for r, _ in everyone.recall("")] == ["a", "b"]
    assert [r.id for r, _ in others.recall("Basel shipment")] == ["a"]
    # a new entry reaches a reader made by the pool at once (no refresh wait)
    pool.write("Basel shipments resume on Monday.", by="researcher", id="c")
    assert "c" in {r.id for r, _ in others.recall("Basel shipments resume")}
    assert pool.remove(["c"]) == 1
    assert "c" not in {r.id for r, _ in others.recall("Basel shipments resume")}


def test_bad_input_is_a_config_error() -> None:
    pool = SharedPool(InMemoryStore(), HashingEmbedder(), tenant="acme")
    with pytest.raises(ConfigError, match="non-empty text"):
        pool.write("  ", by="a")
    with pytest.raises(ConfigError, match="by"):
        pool.write("x", by="")
    with pytest.raises(ConfigError, match="importance"):
        pool.write("x", by="a", importance=3)
    with pytest.raises(ConfigError, match="reader"):
        pool.source(include_own=False)
    with pytest.raises(ConfigError, match="name"):
        SharedPool(InMemoryStore(), HashingEmbedder(), name="")
