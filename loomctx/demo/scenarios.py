"""The demo's three SQL scenarios as scripts for a scripted model (data only).

A :class:`Scenario` is the user's question and the model's replies in order, one per model
call, each an OpenAI-style assistant message (``content`` and optional ``tool_calls`` with
``id``, ``type`` and ``function.name`` / ``function.arguments`` as a JSON string). A loop plays
it: add the question, build, take the next reply, run its tool calls with
:class:`loomctx.demo.tools.SalesTools`, add the results, build again, until a reply without tool
calls. ``needs[i]`` are the document ids the context of model call ``i`` must hold (the schema
the reply at ``i`` relies on); ``absent[i]`` the ones it must not hold yet.

A final answer may quote the last tool result: ``{result}`` in its text stands for it (the
value itself when the result is one column of one row, else the whole table). A script cannot
know the number the database gives; the player fills it in (:func:`fill_result`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, kw_only=True)
class Scenario:
    """One scripted task."""

    name: str
    question: str
    replies: tuple[Mapping[str, Any], ...]
    """The model's reply to each call, in order; the last one has no tool calls."""
    needs: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    """Model call index → document ids its context must hold."""
    absent: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    """Model call index → document ids its context must not hold."""
    aliases: tuple[str, ...] = ()
    """Other wordings of the question that play this script (Chinese ones)."""


RESULT = "{result}"
"""Stands in a scripted answer for the last tool result."""


def result_value(result: str) -> str:
    """The single value of a one-column, one-row tool result; else the result unchanged."""
    lines = result.strip().splitlines()
    if len(lines) == 2 and " | " not in lines[0] and not result.startswith("error:"):
        return lines[1].strip()
    return result.strip()


def fill_result(reply: Mapping[str, Any], last_result: str | None) -> dict[str, Any]:
    """``reply`` with ``{result}`` in its text replaced by the last tool result."""
    out = dict(reply)
    content = out.get("content")
    if isinstance(content, str) and RESULT in content:
        out["content"] = content.replace(
            RESULT, result_value(last_result) if last_result is not None else "(no result)")
    return out


def _call(call_id: str, name: str, content: str = "", **arguments: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content or None, "tool_calls": [
        {"id": call_id, "type": "function",
         "function": {"name": name, "arguments": json.dumps(arguments, sort_keys=True)}}]}


def _answer(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


WEEK_SQL = ("SELECT ROUND(SUM(amount), 2) AS total_sales FROM sales "
            "WHERE sale_date >= date('2025-10-26', '-6 days') AND sale_date <= '2025-10-26'")
BEHAVIOUR_SQL = (
    "SELECT c.segment, COUNT(DISTINCT o.id) AS orders, "
    "ROUND(SUM(oi.quantity * oi.unit_price) / COUNT(DISTINCT o.customer_id), 2) "
    "AS spend_per_customer, ROUND(AVG(pr.rating), 2) AS avg_rating_of_bought_products "
    "FROM customers c JOIN orders o ON o.customer_id = c.id "
    "JOIN order_items oi ON oi.order_id = o.id JOIN products p ON p.id = oi.product_id "
    "LEFT JOIN (SELECT product_id, AVG(rating) AS rating FROM reviews GROUP BY product_id) pr "
    "ON pr.product_id = p.id "
    "WHERE o.status != 'cancelled' GROUP BY c.segment ORDER BY c.segment")
WRONG_RETURNS_SQL = ("SELECT COUNT(DISTINCT order_id) * 100.0 / (SELECT COUNT(*) FROM orders) "
                     "AS return_rate FROM returns")
RETURNS_SQL = (
    "SELECT ROUND(100.0 * (SELECT SUM(r.quantity) FROM returns r "
    "JOIN order_items oi ON oi.id = r.order_item_id JOIN orders o ON o.id = oi.order_id "
    "WHERE o.status != 'cancelled') / SUM(oi.quantity), 2) AS return_rate_pct "
    "FROM order_items oi JOIN orders o ON o.id = oi.order_id WHERE o.status != 'cancelled'")

TOTAL_SALES = Scenario(
    name="total_sales",
    question="Total sales of the last 7 days",
    replies=(_call("call_week", "run_sql", query=WEEK_SQL),
             _answer(f"Total sales of the last 7 days: {RESULT} EUR.")),
    needs={0: ("schema:sales",)},
    aliases=("查询最近7天的销售额",),
)
"""1. One SQL from the first context: the ``sales`` schema is retrieved before the first call,
the query runs, and the answer quotes its number."""

PURCHASE_BEHAVIOUR = Scenario(
    name="purchase_behaviour",
    question="Analyse customer purchase behaviour",
    replies=(
        _call("call_tables", "list_tables",
              "Purchase behaviour may need more than customers and orders; "
              "let me see which tables exist."),
        _call("call_behaviour", "run_sql", query=BEHAVIOUR_SQL),
        _answer("Per segment: the number of orders, the spend per customer, and the average "
                f"rating of the products they bought:\n{RESULT}"),
    ),
    needs={0: ("schema:customers", "schema:orders"),
           1: ("schema:products", "schema:reviews")},
    absent={0: ("schema:products", "schema:reviews")},
    aliases=("分析客户购买行为",),
)
"""2. ``list_tables`` shows products and reviews; the next call's context holds their schemas."""

RETURN_RATE = Scenario(
    name="return_rate",
    question="What is our return rate?",
    replies=(
        _call("call_guess", "run_sql", query=WRONG_RETURNS_SQL),
        _call("call_fixed", "run_sql", query=RETURNS_SQL),
        _answer("The return rate (returned units over sold units, cancelled orders left "
                f"out) is {RESULT} %."),
    ),
    needs={1: ("schema:returns", "schema:order_items")},
    absent={0: ("schema:order_items",)},
    aliases=("查询退货率",),
)
"""3. The first SQL fails on ``returns`` (it has no ``order_id``); the next call's context holds
the ``returns`` schema and the ``order_items`` table that links a return to its order."""

SCENARIOS: tuple[Scenario, ...] = (TOTAL_SALES, PURCHASE_BEHAVIOUR, RETURN_RATE)


def scenario_for(text: str) -> Scenario | None:
    """The scenario named ``text`` or asking it (case and spacing ignored), else None: an
    offline run can only replay the questions it has a script for."""
    key = " ".join(text.lower().replace("_", " ").split()).rstrip("?")
    for sc in SCENARIOS:
        names = (sc.name.replace("_", " "), sc.question.lower().rstrip("?"), *sc.aliases)
        if key in names:
            return sc
    return None

__all__ = ["PURCHASE_BEHAVIOUR", "RESULT", "RETURN_RATE", "SCENARIOS", "TOTAL_SALES", "Scenario",
           "fill_result", "result_value", "scenario_for"]
