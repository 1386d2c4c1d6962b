"""The demo's :class:`~loomctx.retrieval.dynamic.ContextRetriever`: table schemas and business
rules, ranked by BM25.

The knowledge is the database's own definition (:data:`loomctx.demo.sales.TABLES`) and its
rules; one constraint document (how to query) applies to every question and comes first. A
document must score at least ``min_ratio`` of the best one: a weak match (a shared column name
like ``customer_id``) does not pull in a table the question is not about.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from loomctx.demo.sales import TABLES, TODAY, rules
from loomctx.errors import ConfigError
from loomctx.retrieval.dynamic import RetrievedDocument
from loomctx.text.lexical import BM25Index

CONSTRAINTS_ID = "sql:constraints"


def constraints_text(today: date = TODAY) -> str:
    return ("### Constraints\n"
            "Answer with SQLite SQL over the sales database. Use only the tables and columns "
            "shown in the table blocks; when a table you need is missing, call list_tables or "
            "describe_table first. run_sql runs one read-only SELECT (or WITH) statement. "
            f"Today is {today.isoformat()}.")


class SchemaRetriever:
    """BM25 over the demo's schema and rule documents (deterministic, in process)."""

    def __init__(self, *, today: date = TODAY, min_ratio: float = 0.35) -> None:
        if not 0.0 <= min_ratio <= 1.0:
            raise ConfigError(f"min_ratio must be in [0, 1], got {min_ratio!r}")
        self.min_ratio = min_ratio
        self.constraints = RetrievedDocument(id=CONSTRAINTS_ID, text=constraints_text(today),
                                             kind="constraint")
        docs = [RetrievedDocument(id=f"schema:{t.name}", text=t.document(),
                                  metadata={"table": t.name}) for t in TABLES]
        docs += [RetrievedDocument(id=f"rule:{rid}", text=f"### Rule: {rid}\n{text}",
                                   kind="rule") for rid, text in rules(today)]
        self.documents: tuple[RetrievedDocument, ...] = tuple(docs)
        self._index = BM25Index()
        self._index.add([d.text for d in docs])

    def search(self, query: str, top_k: int) -> list[RetrievedDocument]:
        """The constraints, then up to ``top_k`` documents best first (ties by position)."""
        if top_k < 1:
            raise ConfigError(f"top_k must be >= 1, got {top_k!r}")
        hits = [(self.documents[i], s) for i, s in self._index.search(query, top_k)]
        best = {kind: max((s for d, s in hits if d.kind == kind), default=0.0)
                for kind in ("document", "rule")}
        found = [RetrievedDocument(id=d.id, text=d.text, kind=d.kind, metadata=d.metadata,
                                   score=round(s, 6))
                 for d, s in hits if s >= self.min_ratio * best[d.kind]]
        return [self.constraints, *found]

    async def retrieve_for_query(self, query: str, top_k: int) -> list[RetrievedDocument]:
        return self.search(query, top_k)

    def format_documents(self, documents: Sequence[RetrievedDocument]) -> str:
        """Constraints, then tables, then rules (the seed's order), blank-line separated."""
        rank = {"constraint": 0, "document": 1, "rule": 2}
        ordered = sorted(documents, key=lambda d: rank[d.kind])  # stable: keeps the ranking
        return "\n\n".join(d.text for d in ordered)


__all__ = ["CONSTRAINTS_ID", "SchemaRetriever", "constraints_text"]
