"""The seed's recall floors: ``MemoryOptions.min_score`` (memory, L4 semantic search) and
``KnowledgeSource(min_relevance=...)`` (RAG), through a session's build and its report."""

from __future__ import annotations

import pytest

from loomctx import BuildOptions, ConfigError, HashingEmbedder, MemoryOptions, Session
from loomctx.sources.knowledge import Document, KnowledgeSource

DOCS = [
    Document(id="refunds.md", text="Refunds are issued within 30 days of the return. "
             "A refund needs the receipt; refunds of held shipments wait for customs."),
    Document(id="shipping.md", text="Standard shipping takes five days. Express shipping "
             "takes two days and costs extra. A refund of shipping fees is not issued."),
    Document(id="office.md", text="The Lyon office opens at nine. Parking is behind the "
             "building, and visitors sign in at the front desk."),
]
TOPICS = ["parcel", "refund", "invoice", "carrier", "refund check", "pickup", "scan", "label"]
CHAT = [("user" if i % 2 == 0 else "assistant",
         f"Order {1000 + i}: the {TOPICS[i % len(TOPICS)]} was late again, " + "sadly " * 20)
        for i in range(60)]
QUESTION = "when is a refund issued after a return?"


def session(*, min_score: float | None = None, min_relevance: float | None = None) -> Session:
    s = Session("support-1", embedder=HashingEmbedder(), model="gpt-4o", clock=lambda: 0.0,
                knowledge=[KnowledgeSource(DOCS, chunk_tokens=40, min_relevance=min_relevance)],
                memory=MemoryOptions(min_score=min_score),
                options=BuildOptions(format="text"))
    s.add_messages_sync([{"id": f"m{i}", "role": role, "content": text}
                         for i, (role, text) in enumerate(CHAT)])
    return s


def reasons(s: Session, source: str) -> dict[str, str]:
    r = s.build_sync(QUESTION, max_tokens=1000, now=0.0)  # most history is out of the tail
    return {row.id: row.reason for row in r.report.items if row.source == source}


def test_min_relevance_leaves_weak_passages_out_and_says_why() -> None:
    plain = reasons(session(), "L4_semantic")
    knowledge = [i for i in plain if i.endswith(".md#0")]
    assert "office.md#0" not in plain or plain["office.md#0"] != "below_min_relevance"
    r = session(min_relevance=0.9).build_sync(QUESTION, max_tokens=4000, now=0.0)
    rows = {row.id: row for row in r.report.items if row.id.endswith(".md#0")}
    assert rows["refunds.md#0"].included  # the best passage is its own 1.0
    below = [i for i, row in rows.items() if row.reason == "below_min_relevance"]
    assert below and all(not rows[i].included for i in below)
    assert "Parking is behind" not in r.text and "Refunds are issued" in r.text
    assert set(knowledge) >= set(below)  # the same passages were candidates without a floor


def test_min_score_leaves_dissimilar_memories_out_and_says_why() -> None:
    plain = reasons(session(), "L4_semantic")
    # recalled memories the history tail does not show already (those are "duplicate")
    memories = [i for i in plain if not i.endswith(".md#0") and plain[i] != "duplicate"]
    assert memories and "below_min_score" not in plain.values()
    assert "selected" in {plain[i] for i in memories}
    strict = reasons(session(min_score=1.0), "L4_semantic")
    # every memory goes (the history tail, given the room, may show some: "duplicate")
    assert "below_min_score" in {strict[i] for i in memories} <= {"below_min_score",
                                                                   "duplicate"}
    some = reasons(session(min_score=0.012), "L4_semantic")  # refund turns ~0.02, others less
    assert "below_min_score" in some.values()  # a floor between: the least similar go ...
    assert "selected" in {some[i] for i in memories}  # ... and the more similar stay
    assert all(not strict[i].startswith("below") for i in plain if i.endswith(".md#0"))


@pytest.mark.parametrize("bad", [1.5, -0.1, float("nan"), True, "0.5"])
def test_a_floor_out_of_range_is_a_config_error(bad: object) -> None:
    with pytest.raises(ConfigError, match="min_relevance"):
        KnowledgeSource(DOCS, min_relevance=bad)  # type: ignore[arg-type]
    if bad != -0.1:
        with pytest.raises(ConfigError, match="min_score"):
            MemoryOptions(min_score=bad)  # type: ignore[arg-type]


def test_min_score_applies_to_the_agents_memory_from_earlier_sessions_too() -> None:
    from loomctx.stores.memory import InMemoryStore

    store = InMemoryStore()
    first = Session("monday", agent="ops", store=store, embedder=HashingEmbedder(),
                    clock=lambda: 0.0)
    first.add_message_sync("user", "Refunds are issued within 30 days of the return.")
    assert first.end_sync() is not None

    def l3_rows(min_score: float | None) -> dict[str, tuple[bool, str]]:
        later = Session("tuesday", agent="ops", store=store, embedder=HashingEmbedder(),
                        clock=lambda: 0.0, memory=MemoryOptions(min_score=min_score))
        r = later.build_sync(QUESTION, max_tokens=1000, now=0.0)
        return {row.id: (row.included, row.reason) for row in r.report.items
                if row.source == "L3_agent"}

    assert [v for v in l3_rows(None).values()] == [(True, "selected")]
    assert [v for v in l3_rows(0.999).values()] == [(False, "below_min_score")]
