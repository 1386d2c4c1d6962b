"""The seed's SQL demo: a generated sales database, its tools, a schema retriever, and the three
scripted scenarios (per-turn dynamic context in an agent loop).

::

    from loomctx.demo import SalesTools, SchemaRetriever, create_database
    db = create_database()                   # a fresh SQLite file in a temporary folder
    tools = SalesTools(db)                   # list_tables, describe_table, run_sql (read-only)
    retriever = SchemaRetriever()            # BM25 over table schemas and business rules
"""

from loomctx.demo.retriever import CONSTRAINTS_ID, SchemaRetriever
from loomctx.demo.sales import RULES, TABLES, TODAY, create_database, rules
from loomctx.demo.scenarios import (
    PURCHASE_BEHAVIOUR,
    RETURN_RATE,
    SCENARIOS,
    TOTAL_SALES,
    Scenario,
)
from loomctx.demo.tools import TOOL_SCHEMAS, SalesTools

__all__ = [
    "CONSTRAINTS_ID",
    "PURCHASE_BEHAVIOUR",
    "RETURN_RATE",
    "RULES",
    "SCENARIOS",
    "TABLES",
    "TODAY",
    "TOOL_SCHEMAS",
    "TOTAL_SALES",
    "SalesTools",
    "Scenario",
    "SchemaRetriever",
    "create_database",
    "rules",
]
