"""The demo database: seeded, deterministic, dated from a fixed today, written where asked."""

from __future__ import annotations

import sqlite3
import tempfile
from datetime import date
from pathlib import Path

import pytest

from loomctx.demo.sales import DAYS, TABLES, TODAY, create_database, rules
from loomctx.errors import ConfigError

DATE_COLUMNS = {"customers": "signup_date", "orders": "order_date", "sales": "sale_date",
                "reviews": "review_date", "returns": "return_date"}


def _dump(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def test_the_same_seed_gives_the_same_database_and_another_seed_does_not(
        tmp_path: Path) -> None:
    a = create_database(tmp_path / "a.db")
    b = create_database(tmp_path / "b.db")
    c = create_database(tmp_path / "c.db", seed=8)
    assert _dump(a) == _dump(b)
    assert _dump(a) != _dump(c)


def test_every_table_has_rows_and_a_few_hundred_overall(tmp_path: Path) -> None:
    conn = sqlite3.connect(create_database(tmp_path / "s.db"))
    counts = {t.name: conn.execute(f"SELECT COUNT(*) FROM {t.name}").fetchone()[0]
              for t in TABLES}
    assert set(counts) == {"sales", "customers", "orders", "order_items", "products",
                           "reviews", "returns"}
    assert all(n > 0 for n in counts.values()), counts
    assert 300 <= sum(counts.values()) <= 2000


def test_dates_are_iso_days_counted_back_from_today(tmp_path: Path) -> None:
    today = date(2024, 2, 29)
    conn = sqlite3.connect(create_database(tmp_path / "s.db", today=today))
    for table, col in DATE_COLUMNS.items():
        lo, hi = conn.execute(f"SELECT MIN({col}), MAX({col}) FROM {table}").fetchone()
        assert date.fromisoformat(hi) <= today, (table, hi)
        assert date.fromisoformat(lo) < today, (table, lo)
    lo = conn.execute("SELECT MIN(order_date) FROM orders").fetchone()[0]
    assert (today - date.fromisoformat(lo)).days < DAYS
    # a week of sales exists, so "the last 7 days" has an answer
    week = conn.execute("SELECT COUNT(*) FROM sales WHERE sale_date >= date(?, '-6 days')",
                        (today.isoformat(),)).fetchone()[0]
    assert week > 0


def test_the_data_obeys_the_business_rules(tmp_path: Path) -> None:
    conn = sqlite3.connect(create_database(tmp_path / "s.db"))
    # revenue excludes cancelled orders: they have no sales row
    assert conn.execute("SELECT COUNT(*) FROM sales s JOIN orders o ON o.id = s.order_id "
                        "WHERE o.status = 'cancelled'").fetchone()[0] == 0
    # a return never sends back more than its line bought
    assert conn.execute("SELECT COUNT(*) FROM returns r JOIN order_items oi "
                        "ON oi.id = r.order_item_id WHERE r.quantity > oi.quantity"
                        ).fetchone()[0] == 0
    # every sale is the sum of its order's lines
    bad = conn.execute("SELECT COUNT(*) FROM sales s WHERE ABS(s.amount - (SELECT "
                       "SUM(quantity * unit_price) FROM order_items WHERE order_id = s.order_id"
                       ")) > 0.01").fetchone()[0]
    assert bad == 0


def test_rules_name_the_demo_day() -> None:
    text = dict(rules(date(2024, 2, 29)))["dates"]
    assert "2024-02-29" in text and "2024-02-23" in text
    assert TODAY.isoformat() in dict(rules())["dates"]


def test_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    made = create_database()
    assert made.is_file() and made.parent == tmp_path / "loomctx-demo"
    assert create_database() == made and len(list(made.parent.iterdir())) == 1  # one file, reused
    target = tmp_path / "s.db"
    target.write_text("not a database")
    assert create_database(target) == target  # replaced whole
    assert _dump(target) == _dump(made)
    assert not list(tmp_path.glob("*.tmp"))
    with pytest.raises(ConfigError, match="folder"):
        create_database(tmp_path)
    with pytest.raises(ConfigError, match="does not exist"):
        create_database(tmp_path / "missing" / "s.db")
