"""The FTS5 query builder: any free text becomes a MATCH expression SQLite accepts."""

from __future__ import annotations

import sqlite3

from hypothesis import given, settings
from hypothesis import strategies as st

from loomctx.stores._fts import MAX_TERMS, build_query, quote
from loomctx.stores._text import cjk_grams, query_tokens


def test_quote_doubles_inner_quotes() -> None:
    assert quote('say "hi"') == '"say ""hi"""'


def test_terms_are_quoted_and_ored() -> None:
    q = build_query('Paris AND "weather" 爬山')
    assert q.terms is not None and q.trigram is not None
    assert '"paris" OR "and" OR "weather"' in q.terms
    assert '"爬山"' in q.terms
    assert q.trigram == '"paris" OR "and" OR "weather"'  # 爬山 is too short for trigrams


def test_nothing_to_search() -> None:
    q = build_query(" ?! ")
    assert q.terms is None and q.trigram is None


def test_long_queries_are_capped() -> None:
    q = build_query(" ".join(f"word{i}" for i in range(500)))
    assert q.terms is not None and q.terms.count(" OR ") == MAX_TERMS - 1


def test_cjk_grams() -> None:
    assert cjk_grams("a 饺子 b") == ["饺", "子", "饺子"]
    assert cjk_grams("a 饺子 b 山", unigrams=False) == ["饺子", "山"]


def test_query_tokens_skip_unigrams_of_longer_runs() -> None:
    assert "爬" not in query_tokens("周末爬山")
    assert {"周末", "爬山", "末爬"} <= set(query_tokens("周末爬山"))
    assert set(query_tokens("山")) == {"山"}


_DB = sqlite3.connect(":memory:")
_DB.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='trigram')")
_DB.execute("CREATE VIRTUAL TABLE u USING fts5(x, tokenize='unicode61')")
_DB.execute("INSERT INTO t (x) VALUES ('some text 我喜欢在周末去爬山')")
_DB.execute("INSERT INTO u (x) VALUES ('some text 爬山')")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_any_text_is_a_valid_match_expression(text: str) -> None:
    q = build_query(text)
    for table, expr in (("u", q.terms), ("t", q.trigram)):
        if expr is not None:
            rows = _DB.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ?", (expr,))
            assert all(isinstance(r[0], int) for r in rows)
