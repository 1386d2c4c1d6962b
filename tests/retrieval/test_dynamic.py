"""DynamicContextSource (the per-turn retrieved block) and TaskContextSource (the static part)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from loomctx.builder import BuildOptions, ContextBuilder
from loomctx.errors import ConfigError
from loomctx.items import ContextItem, Tier
from loomctx.retrieval.dynamic import (
    ContextRetriever,
    DynamicContextSource,
    DynamicOptions,
    RetrievedDocument,
    newest_step,
    step_text,
)
from loomctx.retrieval.task import TaskContextSource
from loomctx.sources.history import HistorySource

Collect = Callable[..., Sequence[ContextItem]]


class Recording:
    """A retriever that returns fixed documents and records every query it was asked."""

    def __init__(self, docs: Sequence[RetrievedDocument]) -> None:
        self.docs = list(docs)
        self.queries: list[tuple[str, int]] = []

    async def retrieve_for_query(self, query: str, top_k: int) -> list[RetrievedDocument]:
        self.queries.append((query, top_k))
        return [d for d in self.docs if d.kind == "constraint"] + \
            [d for d in self.docs if d.kind != "constraint"][:top_k]

    def format_documents(self, documents: Sequence[RetrievedDocument]) -> str:
        return "\n\n".join(f"<{d.id}>\n{d.text}" for d in documents)


class SyncRetriever(Recording):
    def retrieve_for_query(self, query: str, top_k: int) -> list[RetrievedDocument]:  # type: ignore[override]
        self.queries.append((query, top_k))
        return self.docs[:top_k]


def _docs(n: int = 5) -> list[RetrievedDocument]:
    docs = [RetrievedDocument(id="c", text="use only listed tables", kind="constraint")]
    docs += [RetrievedDocument(id=f"d{i}", text=f"table number {i} " + "col " * 20,
                               score=10.0 - i) for i in range(n)]
    docs.append(RetrievedDocument(id="r", text="a rule about months", score=1.0, kind="rule"))
    return docs


CALL = {"role": "assistant", "content": "checking the tables", "tool_calls": [
    {"id": "c1", "type": "function",
     "function": {"name": "run_sql", "arguments": '{"query": "SELECT x FROM returns"}'}}]}
RESULT = {"role": "tool", "tool_call_id": "c1", "content": "error: no such column: x"}


def test_the_newest_step_is_the_last_model_message_and_what_answered_it() -> None:
    first = [{"role": "user", "content": "return rate?"}]
    assert newest_step(first) == []
    assert newest_step([]) == []
    convo = [*first, {"role": "assistant", "content": "old"}, {"role": "user", "content": "go"},
             CALL, RESULT]
    assert newest_step(convo) == [CALL, RESULT]
    final = {"role": "assistant", "content": "done"}
    assert newest_step([*convo, final]) == [final]
    text = step_text([CALL, RESULT], 1000)
    assert "run_sql" in text and "SELECT x FROM returns" in text
    assert "no such column: x" in text
    assert step_text([CALL, RESULT], 5).splitlines() == ["check", "error"]


def test_the_query_is_rederived_from_the_history_on_every_collect(collect: Collect) -> None:
    history = HistorySource([{"id": "u", "role": "user", "content": "What is our return rate?"}])
    retriever = Recording(_docs())
    source = DynamicContextSource(retriever, history=history)
    collect(source, "What is our return rate?", budget=4000)
    history.extend([{**CALL, "id": "a"}, {**RESULT, "id": "t"}])
    collect(source, "What is our return rate?", budget=4000)
    (q0, k0), (q1, _) = retriever.queries
    assert q0 == "What is our return rate?" and k0 == DynamicOptions().top_k
    assert q1.startswith("What is our return rate?")
    assert "no such column: x" in q1 and "SELECT x FROM returns" in q1
    assert source.last is not None and source.last.query == q1


def test_a_history_in_the_request_context_wins_over_the_attached_one(collect: Collect) -> None:
    retriever = Recording(_docs())
    source = DynamicContextSource(retriever, history=lambda: [CALL, RESULT])
    collect(source, "q", budget=4000, history=[{"role": "user", "content": "q"}])
    collect(source, "q", budget=4000)
    assert retriever.queries[0][0] == "q"
    assert "no such column" in retriever.queries[1][0]


def test_documents_are_tiered_the_seeds_way(collect: Collect) -> None:
    source = DynamicContextSource(Recording(_docs(5)), options=DynamicOptions(high=3))
    items = collect(source, "tables", budget=4000)
    tiers = {it.id: it.tier for it in items}
    assert tiers == {"c": Tier.P0, "d0": Tier.P1, "d1": Tier.P1, "d2": Tier.P1,
                     "d3": Tier.P2, "d4": Tier.P2, "r": Tier.P3}
    assert [it.id for it in items] == ["c", "d0", "d1", "d2", "d3", "d4", "r"]
    assert [it.seq for it in items] == sorted(it.seq for it in items)
    assert {it.kind for it in items} == {"state"}
    assert {it.source for it in items} == {"dynamic_context"}
    for it in items:  # the retriever renders each document
        assert it.content.startswith(f"<{it.id}>\n")


def test_the_block_keeps_to_its_budget_lowest_tier_first(collect: Collect,
                                                         counter: Any) -> None:
    docs = _docs(5)
    retriever = Recording(docs)
    cost = {d.id: counter.count(retriever.format_documents([d])) for d in docs}
    budget = cost["c"] + cost["d0"] + cost["d1"] + cost["d2"] + cost["d3"]
    source = DynamicContextSource(retriever)
    items = collect(source, "tables", budget=budget)
    assert [it.id for it in items] == ["c", "d0", "d1", "d2", "d3"]
    assert source.last is not None
    assert source.last.dropped == ("d4", "r") and source.last.tokens <= budget
    # max_tokens caps below the share; the constraint stays even when it alone is too big.
    capped = DynamicContextSource(retriever, options=DynamicOptions(max_tokens=1))
    assert [it.id for it in collect(capped, "tables", budget=budget)] == ["c"]


def test_a_plain_function_retriever_works_and_an_empty_query_retrieves_nothing(
        collect: Collect) -> None:
    retriever = SyncRetriever(_docs(2))
    source = DynamicContextSource(retriever)
    assert {it.id for it in collect(source, "tables", budget=4000)} == {"c", "d0", "d1", "r"}
    assert collect(source, "   ", budget=4000) == []
    assert len(retriever.queries) == 1


def test_bad_arguments_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="retrieve_for_query"):
        DynamicContextSource(object())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="history"):
        DynamicContextSource(Recording([]), history=42)
    for bad in ({"top_k": 0}, {"high": -1}, {"share": 0.0}, {"share": 1.5},
                {"max_tokens": 0}, {"step_chars": -1}):
        with pytest.raises(ConfigError):
            DynamicOptions(**bad)
    assert isinstance(Recording([]), ContextRetriever)


def test_the_share_is_declared_to_the_builder() -> None:
    source = DynamicContextSource(Recording(_docs()), options=DynamicOptions(share=0.3))
    builder = ContextBuilder([source], options=BuildOptions(model="gpt-4o"))
    assert builder.budget.allocate(10_000).share("dynamic_context") == 3_000


def test_task_context_is_static_pinned_and_deterministic(collect: Collect) -> None:
    a = TaskContextSource("Total sales", phase="sql", mode="read-only",
                          task_context={"db": "sales", "dialect": "sqlite"})
    b = TaskContextSource("Total sales", phase="sql", mode="read-only",
                          task_context={"dialect": "sqlite", "db": "sales"})
    items = collect(a)
    assert [(it.id, it.tier, it.kind) for it in items] == [
        ("task:requirement", Tier.P0, "system"), ("task:phase", Tier.P0, "system"),
        ("task:context", Tier.P1, "system")]
    assert [it.content for it in items] == [it.content for it in collect(b)]
    assert '"dialect": "sqlite"' in items[2].content
    assert [it.id for it in collect(TaskContextSource("x"))] == ["task:requirement"]
    with pytest.raises(ConfigError, match="requirement"):
        TaskContextSource("  ")
    with pytest.raises(ConfigError, match="JSON"):
        TaskContextSource("x", task_context={"bad": object()})


def test_static_part_leads_and_the_block_follows_the_history() -> None:
    history = HistorySource([{"id": "u", "role": "user", "content": "return rate?"},
                             {**CALL, "id": "a"}, {**RESULT, "id": "t"}])
    dyn = DynamicContextSource(Recording(_docs(2)), history=history)
    task = TaskContextSource("return rate?", phase="sql")
    builder = ContextBuilder([history, dyn, task], options=BuildOptions(model="gpt-4o"))
    result = builder.build_sync(None, max_tokens=4000)
    msgs = result.messages
    assert msgs[0]["role"] == "system" and msgs[0]["content"].startswith("### Requirement")
    assert [m["role"] for m in msgs[1:4]] == ["user", "assistant", "tool"]
    assert msgs[-1]["role"] == "system" and "<d0>" in msgs[-1]["content"]
    assert msgs[-1]["content"].index("<c>") < msgs[-1]["content"].index("<d0>") < \
        msgs[-1]["content"].index("<r>")


class Failing(Recording):
    async def retrieve_for_query(self, query: str, top_k: int) -> list[RetrievedDocument]:
        raise RuntimeError("index offline")


def test_a_failing_retriever_degrades_the_build_and_is_named_in_the_report() -> None:
    history = HistorySource([{"id": "u", "role": "user", "content": "return rate?"}])
    dyn = DynamicContextSource(Failing([]), history=history)
    builder = ContextBuilder([history, dyn, TaskContextSource("return rate?")],
                             options=BuildOptions(model="gpt-4o"))
    result = builder.build_sync(None, max_tokens=2000)
    failed = {s.name: s.error for s in result.report.failed_sources}
    assert failed == {"dynamic_context": "RuntimeError: index offline"}
    assert result.messages[-1] == {"role": "user", "content": "return rate?"}
    assert dyn.last is None
