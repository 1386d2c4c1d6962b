"""The demo's schema retriever: constraints first, the tables a question is about, no weak
matches, deterministic."""

from __future__ import annotations

import asyncio

import pytest

from loomctx.demo.retriever import CONSTRAINTS_ID, SchemaRetriever
from loomctx.demo.sales import TABLES, rules
from loomctx.errors import ConfigError
from loomctx.retrieval.dynamic import ContextRetriever, RetrievedDocument


def _ids(docs: list[RetrievedDocument], kind: str = "document") -> list[str]:
    return [d.id for d in docs if d.kind == kind]


def test_it_is_a_context_retriever_over_every_table_and_rule() -> None:
    r = SchemaRetriever()
    assert isinstance(r, ContextRetriever)
    assert _ids(list(r.documents)) == [f"schema:{t.name}" for t in TABLES]
    assert _ids(list(r.documents), "rule") == [f"rule:{rid}" for rid, _ in rules()]


def test_constraints_come_first_for_every_query() -> None:
    r = SchemaRetriever()
    for q in ("Total sales of the last 7 days", "zzz unknown words", "退货率"):
        docs = r.search(q, 5)
        assert docs[0].id == CONSTRAINTS_ID and docs[0].kind == "constraint"
    assert r.search("zzz unknown words", 5)[1:] == []


def test_a_question_finds_the_tables_it_is_about() -> None:
    r = SchemaRetriever()
    assert _ids(r.search("Total sales of the last 7 days", 8))[0] == "schema:sales"
    found = _ids(r.search("Analyse customer purchase behaviour", 8))
    assert set(found) == {"schema:orders", "schema:customers"}
    # reviews mentions customer_id once: a weak match, cut by min_ratio, found without it
    loose = _ids(SchemaRetriever(min_ratio=0.0).search("Analyse customer purchase behaviour",
                                                       8))
    assert "schema:reviews" in loose


def test_top_k_limits_documents_and_scores_are_best_first() -> None:
    docs = SchemaRetriever(min_ratio=0.0).search("orders order_items products returns", 3)
    assert len(docs) == 1 + 3
    scores = [d.score for d in docs[1:]]
    assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)
    with pytest.raises(ConfigError):
        SchemaRetriever().search("x", 0)
    with pytest.raises(ConfigError):
        SchemaRetriever(min_ratio=2.0)


def test_retrieve_for_query_is_search_and_formatting_is_the_seeds_order() -> None:
    r = SchemaRetriever()
    q = "What is our return rate?"
    docs = asyncio.run(r.retrieve_for_query(q, 6))
    assert docs == r.search(q, 6) == SchemaRetriever().search(q, 6)
    # kinds out of order (rules first), each kind keeping its ranking
    shuffled = [d for kind in ("rule", "document", "constraint") for d in docs if d.kind == kind]
    text = r.format_documents(shuffled)
    assert text == r.format_documents(docs)
    assert text.index("### Constraints") < text.index("### Table returns") < \
        text.index("### Rule: return_rate")


@pytest.mark.parametrize(("question", "table"), [
    ("查询退货率", "schema:returns"),
    ("查询最近7天的销售额", "schema:sales"),
    ("分析客户购买行为", "schema:customers"),
])
def test_the_seeds_chinese_questions_find_their_tables(question: str, table: str) -> None:
    found = [d.id for d in SchemaRetriever().search(question, 8)]
    assert table in found


def test_the_chinese_notes_are_searched_but_never_shown() -> None:
    (doc,) = [d for d in SchemaRetriever().search("退货", 8) if d.id == "schema:returns"]
    assert "退货" not in doc.text and doc.text.startswith("### Table returns")
