"""Impact-ordered postings of the PostgreSQL store: tenant-wide lexical search without ``ts_rank``
over every match.

Why: ``ts_rank`` has no index to rank from. A tenant-wide search through the GIN index fetches
every row holding any query term and ranks each with ``ts_rank``, whose cost grows with the
query's terms; at a million memories a common Chinese word of the expanded question matched
~4,600 rows of a tenant, and ranking them (or the first 8,000 matches, the old bound) was the
largest part of a tenant-wide recall (``benchmarks/bench_pg_scale.py``).

``ts_rank(terms, q, 1)`` of an ORed query is a sum over the query terms a row holds, divided by
the number of query terms: each term adds ``0.1 · Σ_{j ≤ n} 1/j² / 1.64493406685`` for its
``n`` positions (every position has the default weight D), and the sum is divided by
``log2(length + 1)``, the row's positions counted. Each term's share of that sum, its *impact*,
depends on the row alone, so it is computed once when the row is written: ``loomctx_postings``
holds one row (tenant, term, impact, pk) per term of a record, indexed by (tenant, term, impact
descending, pk). A search then adds up impacts from the index alone (no record row is read, no
text function runs per match), keeps the best rows, and fetches and ranks only those with
``ts_rank``, so the scores returned are exactly those of ranking every match.

Bounded: each term gives at most ``cap`` postings, its highest impacts. While no term of the
query holds more than ``cap`` rows of the tenant (every term at a million memories in ten
tenants), the list is that of ranking every match, ties at the cut included (every row within
rounding of the cut is ranked by ``ts_rank``, see :func:`ranked_sql`). Past the cap,
a row missing from a term's top ``cap`` is ranked without that term's impact when choosing the
candidates (its returned score is still exact), so the work stops growing with the tenant.

Kept consistent by triggers on ``loomctx_records``: inserts add postings and deletes remove them
(statement-level, with transition tables, so a COPY of 10,000 rows runs one INSERT of their
postings); an update that changes ``terms`` (re-tokenizing) replaces the row's (row-level, and
only for such updates: re-embedding or moving a level never runs it). Every write path of the
store (``put``, COPY, ``delete``, re-tokenizing) and any SQL a user runs stays consistent. A
delete finds a posting by its full index key, recomputing the impact with the same immutable
function: a change of :data:`IMPACTS_SQL` needs a migration that rebuilds the table.

Measured at a million memories in ten tenants (``benchmarks/bench_pg_scale.py``): 19.4M
postings, 2.0 GB with their index; the two lexical lists of a recall cost the server ~20–23 ms
of CPU instead of ~50–64 ms for the bounded GIN stages, and hold 100% of the exact top 10 and
of the exact 256 (99% before). The price is on writes: a COPY of a million rows took ~1.7 times
as long (the trigger computes the impacts), the postings index ~105 s to build, and a database
migrated to this version computes the postings of its rows once (~4 minutes for a million).
Why not ranking every match from the postings without the per-term order: the same sums, but
no way to bound the work once a term holds most of a large tenant.
"""

from __future__ import annotations

from loomctx.stores._pg_rows import COLUMNS, TABLE

POSTINGS = "loomctx_postings"

POSTINGS_INDEX = "loomctx_postings_key"
POSTINGS_INDEX_SQL = (f"CREATE INDEX IF NOT EXISTS {POSTINGS_INDEX} ON {POSTINGS} "
                      "(tenant, term, impact DESC, pk)")
"""A term's postings of one tenant, best impact first; the pk makes a posting's key unique."""

IMPACTS_SQL = r"""
CREATE OR REPLACE FUNCTION loomctx_impacts(t tsvector)
RETURNS TABLE (term text, impact real) LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT u.lexeme,
         (0.1 * CASE WHEN n.n = 1 THEN 1.0::float8
                     ELSE (SELECT sum(1.0::float8 / (j * j)) FROM generate_series(1, n.n) j) END
          / 1.64493406685
          / (ln((SELECT sum(coalesce(array_length(v.positions, 1), 1)) FROM unnest(t) v) + 1)
             / ln(2)))::real
  FROM unnest(t) u, LATERAL (SELECT coalesce(array_length(u.positions, 1), 1) AS n) n
$$
"""
"""Each lexeme of a ``terms`` value with its impact: its share of ``ts_rank(terms, q, 1)``
before the division by the query's term count (PostgreSQL's ``calc_rank_or``)."""

_TRIGGERS = f"""
CREATE OR REPLACE FUNCTION loomctx_postings_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO {POSTINGS} (tenant, term, impact, pk)
  SELECT n.tenant, i.term, i.impact, n.pk FROM loomctx_added n, loomctx_impacts(n.terms) i;
  RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION loomctx_postings_drop() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- each posting found by its full key (LIMIT 1 keeps the planner from turning the lookups
  -- into a skip scan of every term of the tenant per row: seconds for a few hundred rows)
  DELETE FROM {POSTINGS} p WHERE p.ctid = ANY (ARRAY(
    SELECT x.ctid FROM loomctx_dropped o, loomctx_impacts(o.terms) i,
    LATERAL (SELECT y.ctid FROM {POSTINGS} y WHERE y.tenant = o.tenant AND y.term = i.term
             AND y.impact = i.impact AND y.pk = o.pk LIMIT 1) x));
  RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION loomctx_postings_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM {POSTINGS} p WHERE p.ctid = ANY (ARRAY(
    SELECT x.ctid FROM loomctx_impacts(OLD.terms) i,
    LATERAL (SELECT y.ctid FROM {POSTINGS} y WHERE y.tenant = OLD.tenant AND y.term = i.term
             AND y.impact = i.impact AND y.pk = OLD.pk LIMIT 1) x));
  INSERT INTO {POSTINGS} (tenant, term, impact, pk)
  SELECT NEW.tenant, i.term, i.impact, NEW.pk FROM loomctx_impacts(NEW.terms) i;
  RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER loomctx_postings_add AFTER INSERT ON {TABLE}
  REFERENCING NEW TABLE AS loomctx_added
  FOR EACH STATEMENT EXECUTE FUNCTION loomctx_postings_add();
CREATE OR REPLACE TRIGGER loomctx_postings_drop AFTER DELETE ON {TABLE}
  REFERENCING OLD TABLE AS loomctx_dropped
  FOR EACH STATEMENT EXECUTE FUNCTION loomctx_postings_drop();
CREATE OR REPLACE TRIGGER loomctx_postings_change AFTER UPDATE OF terms, tenant, pk ON {TABLE}
  FOR EACH ROW WHEN (OLD.terms IS DISTINCT FROM NEW.terms OR OLD.tenant IS DISTINCT FROM NEW.tenant
                     OR OLD.pk IS DISTINCT FROM NEW.pk)
  EXECUTE FUNCTION loomctx_postings_change();
"""

ADD_INLINE_SQL = f"""
CREATE OR REPLACE FUNCTION loomctx_postings_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- loomctx_impacts inlined, each row's length summed once (the same expression, so the
  -- same real values: the drop trigger finds a posting by its impact)
  INSERT INTO {POSTINGS} (tenant, term, impact, pk)
  SELECT n.tenant, u.lexeme,
         (0.1 * CASE WHEN c.n = 1 THEN 1.0::float8
                     ELSE (SELECT sum(1.0::float8 / (j * j)) FROM generate_series(1, c.n) j) END
          / 1.64493406685 / (ln(l.len + 1) / ln(2)))::real, n.pk
  FROM loomctx_added n,
       LATERAL (SELECT sum(coalesce(array_length(v.positions, 1), 1)) AS len
                FROM unnest(n.terms) v) l,
       unnest(n.terms) u, LATERAL (SELECT coalesce(array_length(u.positions, 1), 1) AS n) c;
  RETURN NULL;
END $$;
"""
"""Schema version 5: the insert trigger computes the impacts in its own statement rather than
calling :data:`IMPACTS_SQL`'s function per row (PostgreSQL's CPU for a put of a user message and
its reply: ~610 → ~430 µs)."""

DRIFT_SQL = f"""
WITH want AS (SELECT r.tenant, i.term, i.impact, r.pk FROM {TABLE} r, loomctx_impacts(r.terms) i),
     got AS (SELECT tenant, term, impact, pk FROM {POSTINGS})
SELECT (SELECT COUNT(*) FROM (SELECT * FROM want EXCEPT ALL SELECT * FROM got) a),
       (SELECT COUNT(*) FROM (SELECT * FROM got EXCEPT ALL SELECT * FROM want) b)
"""
"""(postings missing, postings stale) against the impacts of the stored rows: (0, 0) while the
triggers keep the table (reads every row: a check for tests and benchmarks, not for a live
store)."""

MIGRATION_SQL = f"""
CREATE TABLE IF NOT EXISTS {POSTINGS} (
    tenant TEXT COLLATE "C" NOT NULL,
    term TEXT COLLATE "C" NOT NULL,
    impact REAL NOT NULL,
    pk BIGINT NOT NULL
);
{IMPACTS_SQL};
{_TRIGGERS}
INSERT INTO {POSTINGS} (tenant, term, impact, pk)
SELECT r.tenant, i.term, i.impact, r.pk FROM {TABLE} r, loomctx_impacts(r.terms) i
WHERE NOT EXISTS (SELECT 1 FROM {POSTINGS});
{POSTINGS_INDEX_SQL};
"""
"""Schema version 4: the postings table, its triggers, and the postings of the rows already
stored (the index is built after them: several times faster than growing it row by row)."""

ROUNDING = 1e-5
"""Relative slack below the cut: impacts are summed as ``real``, ``ts_rank`` adds its shares in
its own order, so two sums (or two ranks) may differ in the last bits (~1e-7 each)."""
TIE_FACTOR = 4
"""Rows fetched and ranked at most, in ``limit`` units, when many tie at the cut."""


def ranked_sql() -> str:
    """The tenant's rows for the query terms ranked by ``ts_rank`` (arguments: limit, terms
    (text[]), tenant, cap, fetched at most, the full tsquery).

    Each term's postings are read best first, ``cap`` at most, and summed per row; of the
    ``fetched`` best sums, every row within :data:`ROUNDING` of the ``limit``-th or above is
    fetched and ranked with ``ts_rank``, so the caller's cut (score, then id) is decided by the
    exact scores, rows tied with the last one included, as when every match is ranked. One
    round trip.
    """
    return (f"SELECT {COLUMNS}, ts_rank(r.terms, q, 1) AS score FROM ("
            f"SELECT b.pk, b.s, nth_value(b.s, %s) OVER (ORDER BY b.s DESC ROWS BETWEEN "
            f"UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS cut FROM ("
            f"SELECT p.pk, sum(p.impact) AS s FROM unnest(%s::text[]) t(term) "
            f"CROSS JOIN LATERAL (SELECT x.pk, x.impact FROM {POSTINGS} x "
            f"WHERE x.tenant = %s AND x.term = t.term ORDER BY x.impact DESC LIMIT %s) p "
            f"GROUP BY p.pk ORDER BY s DESC LIMIT %s) b) c "
            f"JOIN {TABLE} r ON r.pk = c.pk, CAST(%s AS tsquery) q "
            f"WHERE c.s >= COALESCE(c.cut, 0) * {1 - ROUNDING!r}")


def arguments(terms: list[str], tenant: str, cap: int, limit: int, tsquery: str
              ) -> list[object]:
    """The arguments of :func:`ranked_sql`."""
    return [max(limit, 1), terms, tenant, cap, TIE_FACTOR * limit, tsquery]


__all__ = ["ADD_INLINE_SQL", "DRIFT_SQL", "IMPACTS_SQL", "MIGRATION_SQL", "POSTINGS",
           "POSTINGS_INDEX", "POSTINGS_INDEX_SQL", "ROUNDING", "TIE_FACTOR", "arguments",
           "ranked_sql"]
