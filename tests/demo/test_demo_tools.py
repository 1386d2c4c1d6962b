"""The demo tools: readable answers, read-only SQL, errors as text, capped rows."""

from __future__ import annotations

import hashlib
import inspect
import sqlite3
from pathlib import Path

import pytest

from loomctx.demo.sales import TABLES, create_database
from loomctx.demo.sandbox import Limits
from loomctx.demo.tools import TOOL_SCHEMAS, SalesTools
from loomctx.errors import ConfigError


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return create_database(tmp_path_factory.mktemp("demo") / "sales.db")


@pytest.fixture
def tools(db: Path) -> SalesTools:
    return SalesTools(db, max_rows=5)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_list_tables_names_every_table_with_its_row_count(tools: SalesTools) -> None:
    lines = tools.list_tables().splitlines()
    assert [ln.split(" ")[0] for ln in lines] == sorted(t.name for t in TABLES)
    orders = next(ln for ln in lines if ln.startswith("orders "))
    count = tools.run_sql("SELECT COUNT(*) AS n FROM orders").splitlines()[1]
    assert f"({count} rows)" in orders


def test_describe_table(tools: SalesTools) -> None:
    text = tools.describe_table("Returns ")
    assert text.startswith("### Table returns") and "order_item_id" in text
    assert tools.describe_table("refunds").startswith("error: no such table: 'refunds'")


def test_run_sql_answers_with_a_header_and_rows(tools: SalesTools) -> None:
    out = tools.run_sql("SELECT id, status FROM orders ORDER BY id LIMIT 2;").splitlines()
    assert out[0] == "id | status" and out[1].startswith("1 | ") and len(out) == 3
    assert tools.run_sql("SELECT id FROM orders WHERE id < 0").splitlines()[1] == "(no rows)"
    capped = tools.run_sql("SELECT id FROM orders").splitlines()
    assert len(capped) == 1 + 5 + 1 and capped[-1].startswith("... (more than 5 rows")
    assert tools.run_sql("-- the total\nWITH t AS (SELECT 2 AS x) SELECT x FROM t"
                         ).splitlines() == ["x", "2"]


@pytest.mark.parametrize("sql, why", [
    ("DELETE FROM sales", "only a single SELECT or WITH"),
    ("DROP TABLE sales", "only a single SELECT or WITH"),
    ("", "only a single SELECT or WITH"),
    ("SELECT 1; DELETE FROM sales", "only a single statement"),
    ("WITH x AS (SELECT 1) DELETE FROM sales", "DELETE sales is not allowed"),
    ("SELECT nope FROM returns", "no such column: nope"),
    ("SELECT * FROM refunds", "no such table: refunds"),
    ("SELECT COUNT(*) FROM orders a, orders b, orders c, orders d", "query stopped"),
])
def test_run_sql_refuses_writes_and_reports_errors_as_text(
        tools: SalesTools, db: Path, sql: str, why: str) -> None:
    before = _digest(db)
    out = tools.run_sql(sql)
    assert out.startswith("error: ") and why in out
    assert _digest(db) == before


def test_a_semicolon_inside_a_string_is_not_a_second_statement(tools: SalesTools) -> None:
    assert tools.run_sql("SELECT 'a;b' AS s").splitlines() == ["s", "a;b"]


def test_call_dispatches_a_model_tool_call(tools: SalesTools) -> None:
    assert tools.call("describe_table", {"name": "sales"}).startswith("### Table sales")
    assert tools.call("drop_all", {}).startswith("error: unknown tool")
    assert tools.call("run_sql", {"sql": "SELECT 1"}).startswith("error: bad arguments")


def test_the_schemas_match_the_signatures(tools: SalesTools) -> None:
    fns = tools.tools()
    assert [s["function"]["name"] for s in TOOL_SCHEMAS] == [f.__name__ for f in fns]
    for schema, fn in zip(TOOL_SCHEMAS, fns, strict=True):
        params = inspect.signature(fn).parameters
        props = schema["function"]["parameters"]["properties"]
        assert sorted(props) == sorted(params) == schema["function"]["parameters"]["required"]
        assert all(p.annotation in (str, "str") for p in params.values())
        assert inspect.signature(fn).return_annotation in (str, "str")
        assert fn.__doc__


def test_a_missing_database_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="create_database"):
        SalesTools(tmp_path / "none.db")
    with pytest.raises(ConfigError, match="max_rows"):
        SalesTools(create_database(tmp_path / "s.db"), max_rows=0)


@pytest.mark.parametrize("sql, shown", [
    ("SELECT [a;b] FROM (SELECT 1 AS [a;b])", ["a;b", "1"]),
    ('SELECT "x;""y" FROM (SELECT 2 AS "x;""y")', ['x;"y', "2"]),
    ("SELECT `c;d` FROM (SELECT 3 AS `c;d`)", ["c;d", "3"]),
    ("SELECT 'it''s; fine' AS s -- a comment; with a semicolon\n", ["s", "it's; fine"]),
    ("SELECT 4 AS n /* ; */;", ["n", "4"]),
])
def test_quoted_identifiers_and_comments_hold_semicolons(
        tools: SalesTools, sql: str, shown: list[str]) -> None:
    assert tools.run_sql(sql).splitlines() == shown


@pytest.mark.parametrize("sql", ['SELECT "a;b"; DELETE FROM sales', "SELECT [x]; SELECT 2",
                                 "SELECT 1 -- c\n; SELECT 2"])
def test_a_semicolon_outside_quotes_still_separates_statements(tools: SalesTools,
                                                               sql: str) -> None:
    assert tools.run_sql(sql).startswith("error: only a single statement")


@pytest.mark.parametrize("sql, denied", [
    ("SELECT fts3_tokenizer('simple')", "the function fts3_tokenizer()"),
    ("SELECT hex(fts3_tokenizer('simple'))", "the function fts3_tokenizer()"),
    ("SELECT fts3_tokenizer('mine', x'0000000000000000')", "the function fts3_tokenizer()"),
    ("SELECT load_extension('libm')", "the function load_extension()"),
    ("SELECT sqlite_compileoption_get(0)", "the function sqlite_compileoption_get()"),
    ("SELECT * FROM pragma_table_info('orders')", "a pragma"),
    ("WITH x AS (SELECT 1) DELETE FROM sales", "DELETE sales"),
])
def test_only_allow_listed_functions_and_reads_run(tools: SalesTools, db: Path, sql: str,
                                                   denied: str) -> None:
    before = _digest(db)
    out = tools.run_sql(sql)
    assert out.startswith(f"error: {denied}") and "is not allowed" in out, out
    assert _digest(db) == before


def test_the_usual_analysis_sql_stays_allowed(tools: SalesTools) -> None:
    out = tools.run_sql(
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) "
        "SELECT n, date('2025-10-26', printf('-%d days', n)) AS d, json_object('n', n) ->> 'n' "
        "AS j, ROUND(AVG(n) OVER (), 2) AS mean, upper(substr('abc', 1, 2)) AS u FROM r")
    assert out.splitlines()[1:] == ["1 | 2025-10-25 | 1 | 2.00 | AB",
                                    "2 | 2025-10-24 | 2 | 2.00 | AB",
                                    "3 | 2025-10-23 | 3 | 2.00 | AB"]


@pytest.mark.skipif(not hasattr(sqlite3.Connection, "setlimit"), reason="Python 3.11+")
def test_a_huge_value_is_stopped_by_the_value_limit(tools: SalesTools) -> None:
    out = tools.run_sql("SELECT randomblob(10000000)")
    assert out.startswith("error: a value is larger than the limit of 1000000 bytes")


def test_a_slow_query_is_stopped_by_the_time_limit(db: Path) -> None:
    slow = SalesTools(db, limits=Limits(max_steps=10**12, max_seconds=0.05))
    out = slow.run_sql("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
                       "SELECT COUNT(*) FROM r")
    assert out == "error: query stopped after 0.05 seconds: add a WHERE or a LIMIT"


def test_the_answer_is_bounded_in_characters(db: Path) -> None:
    small = SalesTools(db, max_rows=1000, max_chars=300)
    out = small.run_sql("SELECT id, name, name, name FROM customers")
    assert len(out) < 300 + 200 and out.splitlines()[-1].startswith("... (cut after ")
    assert "limited to 300 characters" in out
    blob = SalesTools(db, max_chars=1000).run_sql(
        "SELECT CAST(printf('%.*c', 900000, 'x') AS BLOB) AS b, printf('%.*c', 5000, 'x') AS t")
    row = blob.splitlines()[1]
    assert row.startswith("<blob of 900000 bytes> | xxx") and row.endswith("(5000 characters)")
    assert len(row) < 600


def test_sandbox_limits_are_validated() -> None:
    with pytest.raises(ConfigError, match="max_seconds"):
        Limits(max_seconds=0)
    with pytest.raises(ConfigError, match="max_value_bytes"):
        Limits(max_value_bytes=10)


def test_the_agent_tools_raise_on_an_error_and_report_every_result(tools: SalesTools) -> None:
    from loomctx.errors import ToolError

    seen: list[tuple[str, dict[str, object], str]] = []
    _, describe, run_sql = tools.tools(on_result=lambda *a: seen.append(a))
    assert run_sql(query="SELECT 1 AS one") == "one\n1"
    with pytest.raises(ToolError, match=r"^no such table: nope$"):
        run_sql(query="SELECT * FROM nope")
    assert describe(name="sales").startswith("### Table sales")
    assert [(n, a) for n, a, _ in seen] == [("run_sql", {"query": "SELECT 1 AS one"}),
                                           ("run_sql", {"query": "SELECT * FROM nope"}),
                                           ("describe_table", {"name": "sales"})]
    assert seen[1][2] == "error: no such table: nope"
    assert tools.call("run_sql", {"query": "SELECT * FROM nope"}) == seen[1][2]
