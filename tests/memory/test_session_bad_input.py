"""Bad input to a session: a clear error or a documented normalisation, never a corrupt store."""

import pytest

from loomctx import ConfigError, HashingEmbedder, InputError, Session, SQLiteStore


@pytest.fixture
def session(tmp_path):
    s = Session(store=SQLiteStore(tmp_path / "m.db"), embedder=HashingEmbedder(),
                clock=lambda: 1_700_000_000.0)
    yield s
    s.store.close()


def test_duplicate_id_is_an_error_and_nothing_is_written(session):
    session.add_message_sync("user", "hello", id="a")
    with pytest.raises(InputError, match="duplicate"):
        session.add_message_sync("user", "again", id="a")
    assert session.store.count(scope=session.memory.scope) == 1


def test_unparseable_timestamp_is_an_error(session):
    with pytest.raises(InputError, match="ISO 8601"):
        session.add_message_sync("user", "x", timestamp="next tuesday")
    assert session.store.count(scope=session.memory.scope) == 0


def test_iso_and_future_timestamps_are_kept_as_given(session):
    session.add_message_sync("user", "iso", id="i", timestamp="2024-05-08T13:56:00Z")
    session.add_message_sync("user", "future", id="f", timestamp=4_102_444_800)  # year 2100
    got = {r.id: r.timestamp for r in session.store.get(["i", "f"], scope=session.memory.scope)}
    assert got["i"] == 1715176560.0
    assert got["f"] == 4_102_444_800.0  # kept; recency treats the future as "now"
    r = session.build_sync("future", max_tokens=200)
    assert r.tokens <= 200


def test_lone_surrogates_are_stored_as_replacement_characters(session):
    session.add_message_sync("user", "bad \ud800 text", id="s")
    [rec] = session.store.get(["s"], scope=session.memory.scope)
    assert rec.content == "bad \ufffd text"
    assert session.build_sync("text", max_tokens=200).tokens <= 200


def test_empty_and_huge_messages(session):
    session.add_message_sync("assistant", "", id="e")
    session.add_message_sync("user", "word " * 200_000, id="h")  # ~1 MB
    assert session.store.count(scope=session.memory.scope) == 2
    r = session.build_sync("word", max_tokens=300)
    assert r.tokens <= 300
    assert r.report.item("h").reason in ("truncated", "budget", "duplicate")


def test_unknown_role_is_an_error(session):
    with pytest.raises(ConfigError, match="unknown role"):
        session.add_message_sync("robot", "beep")
    assert session.store.count(scope=session.memory.scope) == 0
