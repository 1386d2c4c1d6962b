"""The demo's :class:`~loomctx.retrieval.dynamic.ContextRetriever`: table schemas and business
rules, ranked by BM25.

The knowledge is the database's own definition (:data:`loomctx.demo.sales.TABLES`) and its
rules; one constraint document (how to query) applies to every question and comes first. A
document must score at least ``min_ratio`` of the best one: a weak match (a shared column name
like ``customer_id``) does not pull in a table the question is not about.

The documents are English; :data:`SEARCH_NOTES` give each one Chinese search terms (the
scenarios' questions are Chinese: "查询退货率" must find ``returns``). The notes are indexed, never
shown: what the model reads is the schema as defined, and the search stays lexical, offline
and deterministic (the CJK-aware tokenizer splits "查询退货率" into 查询 / 退货 / 率).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from loomctx.demo.sales import TABLES, TODAY, rules
from loomctx.errors import ConfigError
from loomctx.retrieval.dynamic import RetrievedDocument
from loomctx.text.lexical import BM25Index

CONSTRAINTS_ID = "sql:constraints"

SEARCH_NOTES: dict[str, str] = {
    "schema:customers": "客户 顾客 用户 会员 城市 客户群 细分 注册 购买行为",
    "schema:products": "产品 商品 货品 类别 品类 价格 单价 目录 在售",
    "schema:orders": "订单 购买 下单 购买行为 状态 渠道 取消 日期",
    "schema:order_items": "订单明细 订单行 明细 商品 数量 件数 销量 单价",
    "schema:sales": "销售 销售额 营业额 收入 营收 金额 总额 区域 最近 天",
    "schema:reviews": "评论 评价 评分 星级 打分 口碑",
    "schema:returns": "退货 退货率 退回 退款 退款金额 原因 退",
    "rule:revenue": "销售额 营收 收入 总额 取消",
    "rule:dates": "日期 最近 天 7天 一周 今天",
    "rule:return_month": "退货 月份 按月",
    "rule:return_rate": "退货率 退货 比率 比例",
    "rule:ratings": "评分 平均 评价",
    "rule:active_customer": "活跃 客户 活跃客户",
}
"""Document id → Chinese search terms indexed with it (not shown to the model)."""


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
        self._index.add([f"{d.text}\n{SEARCH_NOTES.get(d.id, '')}" for d in docs])

    def search(self, query: str, top_k: int) -> list[RetrievedDocument]:
        """The constraints, then up to ``top_k`` documents best first (ties by position).

        The query is the task's question on its first line and the newest step after it (a
        failed SQL statement and its error, :meth:`DynamicContextSource.query_for`). The step
        is searched on its own too, and what it matches well is kept beside the question's
        matches: otherwise a question whose words match one table many times over (the
        Chinese search notes of ``returns`` for "查询退货率") sets a best score that the tables
        an error names (``orders``, ``order_items``) cannot reach a share of, and they came one
        model call later than for the same question in English.
        """
        if top_k < 1:
            raise ConfigError(f"top_k must be >= 1, got {top_k!r}")
        found = self._ranked(query, top_k)
        _, _, step = query.partition("\n")
        if step.strip():
            have = {d.id for d in found}
            found += [d for d in self._ranked(step, top_k) if d.id not in have]
        return [self.constraints, *found[:top_k]]

    def _ranked(self, query: str, top_k: int) -> list[RetrievedDocument]:
        """Up to ``top_k`` documents for ``query``, each at least ``min_ratio`` of the best of
        its kind."""
        hits = [(self.documents[i], s) for i, s in self._index.search(query, top_k)]
        best = {kind: max((s for d, s in hits if d.kind == kind), default=0.0)
                for kind in ("document", "rule")}
        return [RetrievedDocument(id=d.id, text=d.text, kind=d.kind, metadata=d.metadata,
                                  score=round(s, 6))
                for d, s in hits if s >= self.min_ratio * best[d.kind]]

    async def retrieve_for_query(self, query: str, top_k: int) -> list[RetrievedDocument]:
        return self.search(query, top_k)

    def format_documents(self, documents: Sequence[RetrievedDocument]) -> str:
        """Constraints, then tables, then rules (what limits an answer first), one blank line
        between documents."""
        rank = {"constraint": 0, "document": 1, "rule": 2}
        ordered = sorted(documents, key=lambda d: rank[d.kind])  # stable: keeps the ranking
        return "\n\n".join(d.text for d in ordered)


__all__ = ["CONSTRAINTS_ID", "SEARCH_NOTES", "SchemaRetriever", "constraints_text"]
