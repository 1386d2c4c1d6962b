"""What the proxy's writes cost PostgreSQL: server CPU per stored turn and per build record.

Why: with ``serve --workers N`` the store runs on the machine's cores beside the workers, so its
CPU per request bounds how much a second worker adds (docs/service.md). Each proxied turn stores
the user message and the reply (``PostgresStore.put``: the row INSERT and its postings trigger)
and saves a build record that is updated once the upstream answered (``loomctx_proxy_builds``:
INSERT, then the outcome UPDATE). Two forms of each, alternated in one run on one server:

- postings: the insert trigger as schema version 5 writes it (impacts computed inline) against
  version 4's (``loomctx_impacts`` called per row); the postings must be the same;
- build records: ``record`` stored uncompressed out of line (``STORAGE EXTERNAL``: the outcome
  UPDATE copies a pointer) against PostgreSQL's default (compressed inline, copied whole).

A build record is a synthetic JSON of ~7.4 KB, the mean size of the proxy's records in
``bench_proxy.py --only workers``. CPU is the PostgreSQL process tree's (Linux ``/proc``).

    python3 benchmarks/bench_pg_writes.py [--rounds 5] [--n 1000] [--json PATH or -]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_proxy import _tree_cpu  # noqa: E402

_WORDS = ("the a shipment customs hold Lyon order pickup carrier scan tracking refund policy "  # noqa: SIM905
          "delayed warehouse pallet bay manifest client question answer ok").split()

_BUILDS = """
DROP TABLE IF EXISTS bench_builds;
CREATE TABLE bench_builds (
    tenant text NOT NULL, id text NOT NULL, session text NOT NULL,
    at double precision NOT NULL, record jsonb NOT NULL, outcome jsonb,
    PRIMARY KEY (tenant, id));
CREATE INDEX ON bench_builds (tenant, session, at);
"""


def _record(rnd: random.Random, k: int) -> str:
    messages = [{"role": rnd.choice(["user", "assistant"]),
                 "content": " ".join(rnd.choice(_WORDS) for _ in range(60)) + f" {k}"}
                for _ in range(14)]
    items = [{"id": f"m{i}", "included": True, "tokens": rnd.randint(1, 99)} for i in range(20)]
    return json.dumps({"id": f"b{k}", "payload": {"model": "gpt-4o", "messages": messages},
                       "report": {"tokens": rnd.randint(100, 4000), "items": items}})


def _puts(store: Any, pid: int, start: int, n: int) -> float:
    """PostgreSQL CPU µs per put of a user message and its reply."""
    import numpy as np

    from loomctx.stores.protocol import MemoryRecord

    rng = np.random.default_rng(start)
    before = _tree_cpu(pid)
    for k in range(start, start + n):
        store.put([MemoryRecord(id=f"m{k}a", content=f"client question {k} about the shipment "
                                f"to Lyon and the customs hold, order {k % 97}", role="user",
                                session="s1", agent="a", seq=2 * k, timestamp=float(k)),
                   MemoryRecord(id=f"m{k}b", content="It is held at customs since Monday; "
                                "the broker has the invoice.", role="assistant", session="s1",
                                agent="a", seq=2 * k + 1, timestamp=float(k))],
                  rng.standard_normal((2, 256)).astype(np.float32))
    return (_tree_cpu(pid) - before) / n * 1e6


def _builds(conn: Any, pid: int, records: list[str], storage: str | None) -> float:
    """PostgreSQL CPU µs per build record saved and then given its outcome."""
    conn.execute(_BUILDS)
    if storage:
        conn.execute(f"ALTER TABLE bench_builds ALTER COLUMN record SET STORAGE {storage}")
    outcome = json.dumps({"usage": {"prompt_tokens": 1200, "completion_tokens": 40},
                          "reply_stored": True, "note": None})
    before = _tree_cpu(pid)
    for k, record in enumerate(records):
        conn.execute("INSERT INTO bench_builds (tenant, id, session, at, record) VALUES "
                     "(%s, %s, %s, %s, %s::jsonb) ON CONFLICT (tenant, id) DO UPDATE SET "
                     "record = EXCLUDED.record, outcome = NULL",
                     ["t", f"b{k}", f"s{k % 16}", float(k), record])
        conn.execute("UPDATE bench_builds AS b SET outcome = u.patch FROM unnest(%s::text[], "
                     "%s::jsonb[]) AS u(id, patch) WHERE b.tenant = %s AND b.id = u.id",
                     [[f"b{k}"], [outcome], "t"])
    return (_tree_cpu(pid) - before) / len(records) * 1e6


def _spread(xs: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(xs)), "min": round(min(xs)),
            "max": round(max(xs))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="alternations of the two forms")
    ap.add_argument("--n", type=int, default=1000, help="puts and build records per round")
    ap.add_argument("--json", default=str(HERE / "results" / "pg_writes.json"),
                    help="write the results here (- for none)")
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.n < 1:
        ap.error("--rounds and --n must be >= 1")

    import psycopg

    from loomctx.servers import PostgresServer
    from loomctx.stores import _pg_postings
    from loomctx.stores.postgres import PostgresStore

    v4_add = _pg_postings._TRIGGERS.split("CREATE OR REPLACE FUNCTION loomctx_postings_drop")[0]
    forms = {"inline (schema 5)": _pg_postings.ADD_INLINE_SQL, "per row (schema 4)": v4_add}
    storages = {"external": "EXTERNAL", "default": None}
    puts: dict[str, list[float]] = {k: [] for k in forms}
    builds: dict[str, list[float]] = {k: [] for k in storages}
    rnd = random.Random(0)
    records = [_record(rnd, k) for k in range(args.n)]
    with PostgresServer() as pg:
        url = pg.create_database()
        pid = pg._proc.pid  # type: ignore[union-attr]
        with PostgresStore(url) as store, psycopg.connect(url, autocommit=True) as conn:
            _puts(store, pid, 0, args.n)  # warm-up
            start = args.n
            for _ in range(args.rounds):
                for name, sql in forms.items():
                    conn.execute(sql)
                    puts[name].append(_puts(store, pid, start, args.n))
                    start += args.n
                for name, storage in storages.items():
                    builds[name].append(_builds(conn, pid, records, storage))
            conn.execute(_pg_postings.ADD_INLINE_SQL)
            [(missing, stale)] = conn.execute(_pg_postings.DRIFT_SQL).fetchall()
    out = {
        "benchmark": "bench_pg_writes.py", "rounds": args.rounds, "n": args.n,
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpus": os.cpu_count(), "load_avg": os.getloadavg()},
        "record_bytes": round(statistics.mean(map(len, records))),
        "pg_cpu_us_per_put": {k: _spread(v) for k, v in puts.items()},
        "pg_cpu_us_per_build_record": {k: _spread(v) for k, v in builds.items()},
        "postings_missing_stale": [int(missing), int(stale)],
    }
    print(json.dumps(out, indent=1))
    if args.json != "-":
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 1 if (missing, stale) != (0, 0) else 0


if __name__ == "__main__":
    sys.exit(main())
