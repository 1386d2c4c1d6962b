"""The demo's SQLite sales database: its tables, its business rules, and a seeded generator.

One definition (:data:`TABLES`) both creates the database and writes the schema documents the
agent retrieves, so the two can never disagree. Dates count back from a fixed :data:`TODAY`, so
"the last 7 days" selects the same rows on every machine and every run. Nothing is downloaded and
no database file is shipped: :func:`create_database` writes one where it is asked to.
"""

from __future__ import annotations

import os
import random
import sqlite3
import tempfile
import uuid
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from loomctx.errors import ConfigError

TODAY = date(2025, 10, 26)
"""The demo's "today": every generated date is at most this day."""
DAYS = 120
"""How many days of orders the generator writes (ending at ``today``)."""


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    note: str


@dataclass(frozen=True)
class Table:
    name: str
    description: str
    columns: tuple[Column, ...]

    def ddl(self) -> str:
        cols = ", ".join(f"{c.name} {c.type}" for c in self.columns)
        return f"CREATE TABLE {self.name} ({cols})"

    def document(self) -> str:
        """The schema document the retriever indexes and the agent reads."""
        lines = [f"### Table {self.name}", self.description, "Columns:"]
        lines += [f"- {c.name} {c.type.split()[0]}: {c.note}" for c in self.columns]
        return "\n".join(lines)


def _t(name: str, description: str, *cols: tuple[str, str, str]) -> Table:
    return Table(name, description, tuple(Column(*c) for c in cols))


TABLES: tuple[Table, ...] = (
    _t("customers", "Customers: one row per registered customer, with city and segment.",
       ("id", "INTEGER PRIMARY KEY", "customer id"),
       ("name", "TEXT NOT NULL", "full name"),
       ("email", "TEXT NOT NULL", "contact address, unique"),
       ("city", "TEXT NOT NULL", "home city"),
       ("segment", "TEXT NOT NULL", "'consumer' or 'business'"),
       ("signup_date", "TEXT NOT NULL", "registration day, ISO YYYY-MM-DD")),
    _t("products", "Products: the catalogue, one row per article with its category and list "
       "price.",
       ("id", "INTEGER PRIMARY KEY", "product id"),
       ("name", "TEXT NOT NULL", "article name"),
       ("category", "TEXT NOT NULL", "catalogue category (Kitchen, Garden, Office, Toys...)"),
       ("unit_price", "REAL NOT NULL", "current list price"),
       ("active", "INTEGER NOT NULL", "1 while the article is sold, 0 once discontinued")),
    _t("orders", "Orders: one row per customer purchase (a basket), its day, status and "
       "channel.",
       ("id", "INTEGER PRIMARY KEY", "order id"),
       ("customer_id", "INTEGER NOT NULL REFERENCES customers(id)", "who bought"),
       ("order_date", "TEXT NOT NULL", "day of the purchase, ISO YYYY-MM-DD"),
       ("status", "TEXT NOT NULL", "'completed', 'shipped' or 'cancelled'"),
       ("channel", "TEXT NOT NULL", "'web' or 'store'")),
    _t("order_items", "Order items: the lines of an order, one per article bought.",
       ("id", "INTEGER PRIMARY KEY", "line id"),
       ("order_id", "INTEGER NOT NULL REFERENCES orders(id)", "the order it belongs to"),
       ("product_id", "INTEGER NOT NULL REFERENCES products(id)", "the article"),
       ("quantity", "INTEGER NOT NULL", "units bought"),
       ("unit_price", "REAL NOT NULL", "price paid per unit (after discount)")),
    _t("sales", "Sales: the revenue ledger, one row per paid order with its amount and "
       "region; daily and weekly sales totals come from here.",
       ("id", "INTEGER PRIMARY KEY", "ledger row id"),
       ("order_id", "INTEGER NOT NULL REFERENCES orders(id)", "the paid order"),
       ("sale_date", "TEXT NOT NULL", "day the payment was booked, ISO YYYY-MM-DD"),
       ("amount", "REAL NOT NULL", "amount paid, in EUR"),
       ("region", "TEXT NOT NULL", "'north', 'south', 'east' or 'west'")),
    _t("reviews", "Reviews: star ratings and comments on products, one row per review.",
       ("id", "INTEGER PRIMARY KEY", "review id"),
       ("product_id", "INTEGER NOT NULL REFERENCES products(id)", "reviewed article"),
       ("customer_id", "INTEGER NOT NULL REFERENCES customers(id)", "author of the review"),
       ("rating", "INTEGER NOT NULL", "1 to 5 stars"),
       ("review_date", "TEXT NOT NULL", "ISO YYYY-MM-DD"),
       ("comment", "TEXT NOT NULL", "free text")),
    _t("returns", "Returns: goods sent back, one row per returned order line (order_items), "
       "with the refund.",
       ("id", "INTEGER PRIMARY KEY", "return id"),
       ("order_item_id", "INTEGER NOT NULL REFERENCES order_items(id)",
        "the returned line; join order_items to reach the order"),
       ("return_date", "TEXT NOT NULL", "day the goods came back, ISO YYYY-MM-DD"),
       ("quantity", "INTEGER NOT NULL", "units sent back (at most the line's quantity)"),
       ("refund_amount", "REAL NOT NULL", "money paid back, in EUR"),
       ("reason", "TEXT NOT NULL", "'damaged', 'wrong size', 'not as described' or "
        "'changed mind'")),
)

RULES: tuple[tuple[str, str], ...] = (
    ("revenue", "Revenue and sales totals sum sales.amount. Cancelled orders have no sales "
                "row, so revenue excludes cancelled orders."),
    ("dates", "Dates are ISO text (YYYY-MM-DD) and compare as strings. Today is {today}; "
              "'the last 7 days' are {week_start} to {today} inclusive, i.e. "
              "date('{today}', '-6 days') to '{today}'."),
    ("return_month", "A return counts against the month of its order (orders.order_date), "
                     "not the month of return_date."),
    ("return_rate", "Return rate = returned units / sold units, over order lines of orders "
                    "that were not cancelled."),
    ("ratings", "Average ratings use reviews.rating; products without reviews are left out "
                "rather than counted as 0."),
    ("active_customer", "An active customer placed at least one order that was not "
                        "cancelled in the last 90 days."),
)
"""(id, text) business rules; ``{today}`` and ``{week_start}`` are filled from the demo day."""


def rules(today: date = TODAY) -> list[tuple[str, str]]:
    """The business rules with the demo day filled in."""
    week_start = (today - timedelta(days=6)).isoformat()
    return [(rid, text.format(today=today.isoformat(), week_start=week_start))
            for rid, text in RULES]


_FIRST = ("Ada", "Bruno", "Chen", "Dana", "Emil", "Fatima", "Goran", "Hana", "Ivo", "Jin",
          "Kofi", "Lena", "Mateo", "Nora", "Omar", "Priya", "Quinn", "Rosa", "Sven", "Tariq")
_LAST = ("Alvarez", "Berg", "Costa", "Dubois", "Eriksen", "Fischer", "Garcia", "Horvat",
         "Ito", "Jansen", "Kowalski", "Larsen", "Moreau", "Novak", "Olsen")
_CITIES = ("Lyon", "Porto", "Graz", "Gent", "Turku", "Brno", "Malmo", "Bilbao")
_CATEGORIES = {"Kitchen": ("Kettle", "Knife set", "Pan", "Grinder", "Scale"),
               "Garden": ("Hose", "Shears", "Planter", "Rake", "Lantern"),
               "Office": ("Desk lamp", "Notebook", "Stapler", "Monitor arm", "Chair mat"),
               "Toys": ("Puzzle", "Kite", "Blocks", "Yo-yo", "Robot kit")}
_REASONS = ("damaged", "wrong size", "not as described", "changed mind")
_COMMENTS = {1: "Broke in a week.", 2: "Not worth the price.", 3: "Does the job.",
             4: "Good value.", 5: "Excellent, would buy again."}


Row = tuple[Any, ...]


def _rows(rng: random.Random, today: date) -> dict[str, list[Row]]:
    def day(back: int) -> str:
        return (today - timedelta(days=back)).isoformat()

    customers: list[Row] = [
        (i, f"{rng.choice(_FIRST)} {rng.choice(_LAST)}", f"customer{i}@example.com",
         rng.choice(_CITIES), rng.choice(("consumer", "consumer", "business")),
         day(DAYS + rng.randrange(400))) for i in range(1, 81)]
    products: list[Row] = []
    for cat, names in _CATEGORIES.items():
        for name in names:
            products.append((len(products) + 1, name, cat, round(rng.uniform(4, 120), 2),
                             int(rng.random() > 0.1)))
    orders: list[Row] = []
    items: list[Row] = []
    sales: list[Row] = []
    returns: list[Row] = []
    for oid in range(1, 161):
        back = rng.randrange(DAYS)
        status = rng.choices(("completed", "shipped", "cancelled"), (0.75, 0.15, 0.10))[0]
        orders.append((oid, rng.randrange(1, len(customers) + 1), day(back), status,
                       rng.choice(("web", "store"))))
        total = 0.0
        for _ in range(rng.randint(1, 3)):
            pid, _n, _c, price, _a = rng.choice(products)
            qty = rng.randint(1, 4)
            paid = round(price * rng.choice((1.0, 1.0, 0.9)), 2)
            items.append((len(items) + 1, oid, pid, qty, paid))
            total += qty * paid
            if status != "cancelled" and back > 2 and rng.random() < 0.12:
                rq = rng.randint(1, qty)
                returns.append((len(returns) + 1, len(items), day(back - rng.randint(1, 2)),
                                rq, round(rq * paid, 2), rng.choice(_REASONS)))
        if status != "cancelled":
            sales.append((len(sales) + 1, oid, day(back), round(total, 2),
                          rng.choice(("north", "south", "east", "west"))))
    reviews: list[Row] = []
    for rid in range(1, 91):
        rating = rng.choices((1, 2, 3, 4, 5), (1, 1, 2, 4, 4))[0]
        reviews.append((rid, rng.randrange(1, len(products) + 1),
                        rng.randrange(1, len(customers) + 1), rating, day(rng.randrange(DAYS)),
                        _COMMENTS[rating]))
    return {"customers": customers, "products": products, "orders": orders,
            "order_items": items, "sales": sales, "reviews": reviews, "returns": returns}


def create_database(path: str | os.PathLike[str] | None = None, *, seed: int = 7,
                    today: date = TODAY) -> Path:
    """Write the demo database to ``path``; return its path.

    The same ``seed`` and ``today`` give the same rows. An existing file at ``path`` is
    replaced whole (the new database is written beside it and moved over it). With no ``path``
    the file goes to one folder of the system's temporary directory, named by seed and date, so
    repeated demo runs rewrite one file instead of leaving a folder each.
    """
    if path is None:
        folder = Path(tempfile.gettempdir()) / "loomctx-demo"
        folder.mkdir(mode=0o700, exist_ok=True)
        target = folder / f"sales-{seed}-{today.isoformat()}.db"
    else:
        target = Path(path)
        if target.is_dir():
            raise ConfigError(f"database path {str(target)!r} is a folder: give a file path "
                              "such as .../sales.db")
        if not target.parent.is_dir():
            raise ConfigError(f"folder {str(target.parent)!r} does not exist: create it first")
    tmp = target.with_name(f"{target.name}.{uuid.uuid4().hex[:8]}.tmp")  # concurrent runs
    tmp.unlink(missing_ok=True)
    data = _rows(random.Random(seed), today)
    conn = sqlite3.connect(tmp)
    try:
        with conn:
            for table in TABLES:
                conn.execute(table.ddl())
                marks = ", ".join("?" * len(table.columns))
                conn.executemany(f"INSERT INTO {table.name} VALUES ({marks})", data[table.name])
    finally:
        conn.close()
    os.replace(tmp, target)
    return target


__all__ = ["DAYS", "RULES", "TABLES", "TODAY", "Column", "Table", "create_database", "rules"]
