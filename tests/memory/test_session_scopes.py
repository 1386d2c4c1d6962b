"""Sessions keep their own data: the same message id in two sessions (or tenants) is two records."""

from pathlib import Path

import pytest

from loomctx import ConfigError, HashingEmbedder, Scope, Session, SQLiteStore


def _open(path: Path, session_id: str, **kw: str) -> Session:
    return Session(id=session_id, store=SQLiteStore(path), embedder=HashingEmbedder(), **kw)


def _history(s: Session) -> list[tuple[str, str]]:
    return [(it.id, it.content) for it in s.memory.history.items]


def test_same_message_id_in_two_sessions_on_one_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    first, second = _open(path, "alice-chat"), _open(path, "bob-chat")
    first.add_message_sync("user", "Where is shipment SHP-40233?", id="m1")
    second.add_message_sync("user", "Book a table for two tonight.", id="m1")
    first.store.close()
    second.store.close()

    first, second = _open(path, "alice-chat"), _open(path, "bob-chat")
    assert _history(first) == [("m1", "Where is shipment SHP-40233?")]
    assert _history(second) == [("m1", "Book a table for two tonight.")]
    # Each session's recall sees only its own message, although both share the id.
    result = first.build_sync("table for two tonight", max_tokens=400)
    assert "Book a table" not in str(result.messages)
    assert first.store.count(scope=Scope(agent="agent")) == 2
    first.store.close()
    second.store.close()


def test_same_session_in_two_tenants_on_one_file(tmp_path: Path) -> None:
    path = tmp_path / "tenants.db"
    acme = _open(path, "chat", tenant="acme")
    globex = _open(path, "chat", tenant="globex")
    acme.add_message_sync("user", "acme's launch date is in March", id="m1")
    globex.add_message_sync("user", "globex prefers the blue logo", id="m1")
    summary_id = acme.end_sync()
    acme.store.close()
    globex.store.close()

    with SQLiteStore(path) as store:
        [own] = store.get(["m1"], scope=Scope(tenant="globex"))
        assert own.content == "globex prefers the blue logo"
        assert [r.tenant for r in store.scan(scope=Scope(tenant="acme"))] == ["acme", "acme"]
        assert summary_id is not None
        assert store.get([summary_id], scope=Scope(tenant="globex")) == []
        assert [h.record.tenant for h in store.search_lexical(
            "launch logo", scope=Scope(tenant="globex"))] == ["globex"]
        assert store.count(scope=Scope()) == 0  # the default tenant holds nothing


def test_a_bad_tenant_is_a_caller_error() -> None:
    with pytest.raises(ConfigError, match="tenant"):
        Session(embedder=HashingEmbedder(), tenant="")
