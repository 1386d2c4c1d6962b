"""The SQL demo: a generated sales database, its tools, a schema retriever, and the three
scripted scenarios (per-turn dynamic context in an agent loop).

::

    from loomctx.demo import SalesTools, SchemaRetriever, create_database
    db = create_database()                   # a fresh SQLite file in a temporary folder
    tools = SalesTools(db)                   # list_tables, describe_table, run_sql (read-only)
    retriever = SchemaRetriever()            # BM25 over table schemas and business rules

    demo = sql_demo("Total sales of the last 7 days", db=db)   # Session + sources, wired
    steps = replay(TOTAL_SALES, demo)        # a scripted run without a model
"""

from loomctx.demo.retriever import CONSTRAINTS_ID, SchemaRetriever
from loomctx.demo.sales import RULES, TABLES, TODAY, create_database, rules
from loomctx.demo.scenarios import (
    PURCHASE_BEHAVIOUR,
    RETURN_RATE,
    SCENARIOS,
    TOTAL_SALES,
    Scenario,
    scenario_for,
)
from loomctx.demo.setup import SYSTEM_PROMPT, SqlDemo, Step, replay, sql_demo
from loomctx.demo.tools import TOOL_SCHEMAS, SalesTools

__all__ = [
    "CONSTRAINTS_ID",
    "PURCHASE_BEHAVIOUR",
    "RETURN_RATE",
    "RULES",
    "SCENARIOS",
    "SYSTEM_PROMPT",
    "SalesTools",
    "Scenario",
    "SchemaRetriever",
    "SqlDemo",
    "Step",
    "TABLES",
    "TODAY",
    "TOOL_SCHEMAS",
    "TOTAL_SALES",
    "create_database",
    "replay",
    "rules",
    "scenario_for",
    "sql_demo",
]
