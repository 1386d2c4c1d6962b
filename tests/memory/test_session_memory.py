"""Sessions and memory tiers: ids kept, eviction never loses data, retrieval finds old facts."""

import asyncio

import pytest

from loomctx import (
    ComponentPriority,
    ConfigError,
    ContextAssembler,
    HashingEmbedder,
    HeuristicImportance,
    MemoryOptions,
    QueryRewriter,
    Session,
    SessionState,
    SQLiteStore,
)
from loomctx.retrieval.reranker import Candidate, UnifiedReranker


def _session(**kw):
    return Session(embedder=HashingEmbedder(), model="gpt-4o", clock=lambda: 1_700_000_000.0,
                   memory=MemoryOptions(l1_max_tokens=200, l2_max_items=3), **kw)


def _fill(s, n=60):
    for i in range(n):
        s.add_message_sync("user" if i % 2 == 0 else "assistant",
                      f"turn {i} about the weather and nothing else", id=f"t{i}",
                      timestamp=1_699_990_000 + i)


def test_ids_are_kept_and_nothing_is_lost_on_eviction():
    s = _session()
    s.add_message_sync("user", "Please remember: my dog is called Biscuit and he is 7.", id="dog",
                  timestamp=1_699_980_000)
    _fill(s)
    # Every message is in the store, whatever its tier.
    assert s.store.count(scope=s.memory.scope) == 61
    levels = {r.id: r.level for r in s.store.scan(scope=s.memory.scope)}
    assert levels["dog"] in ("L2", "L4")  # evicted from L1, not dropped
    assert levels["t59"] == "L1"
    assert sum(1 for v in levels.values() if v == "L2") <= 3  # L2 overflow went to L4
    assert len(s.memory.l1_ids) < 61


def test_build_retrieves_an_evicted_fact_by_its_id():
    s = _session(system_prompt="Be brief.")
    s.add_message_sync("user", "Please remember: my dog is called Biscuit.", id="dog")
    _fill(s)
    r = s.build_sync("What is my dog called?", max_tokens=300)
    assert r.tokens <= 300
    assert "dog" in r.report.included_ids
    assert "Biscuit" in str(r.messages)
    row = next(i for i in r.report.items if i.id == "dog" and i.included)
    assert row.source in ("L2_important", "L4_semantic")


def test_importance_signals():
    imp = HeuristicImportance()
    assert imp.score("Please remember my flight is on 3 May at 14:05") > 0.6
    assert imp.score("ok") < 0.3
    assert imp.score("我决定下周一去北京，记住这个") > 0.6


def test_query_rewriter_appends_recent_terms():
    rw = QueryRewriter(last_n=2, top_k=2)
    out = rw.rewrite("and the second one?", ["We compared Postgres and SQLite backups",
                                              "Postgres backups run nightly"])
    assert out.startswith("and the second one?")
    assert "postgre" in out and "backup" in out  # terms are stemmed


def test_reranker_dedups_and_orders():
    rr = UnifiedReranker()
    a = Candidate(id="a", content="the dog is called Biscuit", origin="memory:L4", vector=0.9,
                  ranks={"lexical": 0, "dense": 0}, tokens=8)
    b = Candidate(id="b", content="the  dog is called   Biscuit", origin="memory:L4",
                  vector=0.5, ranks={"lexical": 1}, tokens=8)
    c = Candidate(id="c", content="weather is fine", origin="memory:L4", vector=0.1,
                  ranks={"dense": 5}, tokens=4)
    out = rr.rerank("dog name", [a, b, c])
    assert [x.id for x in out] == ["a", "c"]  # b is a duplicate of a with a lower vector


def test_session_lifecycle_and_l3_summary():
    s = _session()
    _fill(s, 10)
    s.pause()
    assert s.state is SessionState.PAUSED
    with pytest.raises(ConfigError):
        s.add_message_sync("user", "hi")
    s.resume()
    sid = s.end_sync()
    assert s.state is SessionState.ENDED
    assert sid is not None
    [summary] = s.store.get([sid], scope=s.memory.scope)
    assert summary.level == "L3" and summary.agent == "agent"
    assert all(r.level in ("L3", "L4") for r in s.store.scan(scope=s.memory.scope))


def test_session_on_sqlite_persists(tmp_path):
    path = tmp_path / "mem.db"
    s = Session(store=SQLiteStore(path), embedder=HashingEmbedder(),
                memory=MemoryOptions(l1_max_tokens=100))
    _fill(s, 20)
    s.store.close()
    again = SQLiteStore(path)
    assert again.count(scope=s.memory.scope) == 20
    assert {r.id for r in again.scan(scope=s.memory.scope)} == {f"t{i}" for i in range(20)}


def test_bad_tool_result_is_rejected_and_leaves_memory_unchanged():
    s = _session()
    _fill(s, 4)
    before = s.store.count(scope=s.memory.scope)
    with pytest.raises(ConfigError):
        s.add_messages_sync([{"role": "tool", "tool_call_id": "nope", "content": "x"}])
    assert s.store.count(scope=s.memory.scope) == before


def test_build_sync_and_build_agree():
    s = _session()
    _fill(s, 12)
    a = s.build_sync("weather", max_tokens=200, now=1_700_000_000.0)
    b = asyncio.run(s.build("weather", max_tokens=200, now=1_700_000_000.0))
    assert a.payload == b.payload and a.tokens == b.tokens


def test_assembler_keeps_critical_and_reports():
    asm = ContextAssembler(40)
    asm.add_component("need", "Build the Q3 sales report.", ComponentPriority.CRITICAL)
    asm.add_component("schema", "orders(id, amount, date) " * 30, ComponentPriority.HIGH)
    asm.add_component("rules", "Use SQL only.", ComponentPriority.LOW)
    text = asm.assemble()
    assert "Build the Q3 sales report." in text
    summary = asm.get_summary()
    assert summary["total_tokens"] <= 40
    fates = {c["name"]: c for c in summary["components"]}
    assert fates["need"]["included"]
    with pytest.raises(ConfigError):
        asm.add_component("need", "again")


def test_unified_retrieval_ranks_knowledge_and_memory_together():
    from loomctx import Document, KnowledgeSource

    kb = KnowledgeSource([Document("policy.md", "Refunds for customs holds: a 5% goodwill "
                                                "credit after five working days.")])
    s = _session(knowledge=[kb])
    s.add_message_sync("user", "The Lyon customer asked about a refund for the customs hold.",
                  id="ask")
    _fill(s, 40)
    r = s.build_sync("refund for a customs hold", max_tokens=400)
    included = r.report.included_ids
    assert "policy.md#0" in included and "ask" in included
    row = next(i for i in r.report.items if i.id == "policy.md#0")
    assert row.source == "L4_semantic"


def test_a_turn_build_reuses_the_vector_its_message_was_stored_with():
    # The agent loop adds the user's message, then builds: the question's embedding was paid
    # when the message was stored, so the build sends nothing new to the model.
    s = _session()
    s.add_message_sync("user", "We adopted a dog named Pepper last spring.", id="dog")
    s.add_message_sync("assistant", "Lovely!", id="ok")
    s.add_message_sync("user", "What did we name the dog we adopted?", id="q")
    misses = s.embedder.misses
    result = s.build_sync(max_tokens=500)  # a turn build: the question is the last message
    assert s.embedder.misses == misses
    assert "dog" in {r.id for r in result.report.items if r.included}
    s.build_sync("What did we name the dog we adopted?", max_tokens=500)
    assert s.embedder.misses == misses


def test_staged_messages_are_built_but_not_stored_and_unstage_takes_them_back():
    s = _session()
    _fill(s, 10)
    stored, records = s.store.count(scope=s.memory.scope), dict(s.memory.records)
    staged = s.stage([{"role": "user", "content": "what about the sea?"}])
    assert staged[0]["id"]  # the id it will be stored with
    built = s.build_sync(max_tokens=2000)
    assert built.payload["messages"][-1]["content"] == "what about the sea?"
    with pytest.raises(ConfigError, match="staged"):
        s.add_message_sync("user", "another")
    assert s.store.count(scope=s.memory.scope) == stored and s.memory.records == records
    s.unstage()
    s.unstage()  # nothing staged: nothing taken back
    assert len(s.memory.history.items) == 10 and s.memory.records == records
    assert s.stage([]) == [] and len(s.memory.history.items) == 10
    s.unstage()
    assert len(s.memory.history.items) == 10  # an empty stage took nothing back
    s.stage(staged)
    s.unstage()
    s.add_messages_sync([*staged, {"role": "assistant", "content": "calm"}])
    assert [it.id for it in s.memory.history.items[-2:-1]] == [staged[0]["id"]]
    assert s.store.count(scope=s.memory.scope) == stored + 2
