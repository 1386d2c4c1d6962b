"""WorkSpace and ConversationManager: numbering, refs, history access, persistence, scoping."""

from __future__ import annotations

from pathlib import Path

import pytest

from loomctx.errors import ConfigError
from loomctx.stores import InMemoryStore, Scope, SQLiteStore
from loomctx.workspace import ConversationManager, WorkSpace, parse_refs

S1 = Scope(tenant="t", agent="loomi", session="s1")
S2 = Scope(tenant="t", agent="loomi", session="s2")


def test_notes_are_numbered_per_type() -> None:
    ws = WorkSpace()
    ids = [ws.add_note(t, f"{t} text").id
           for t in ("resonant", "persona", "persona", "hitpoint", "persona", "material")]
    assert ids == ["resonant1", "persona1", "persona2", "hitpoint1", "persona3", "material1"]
    assert ws.get_note("persona2") is not None and ws.get_note("persona2").content == "persona text"
    with pytest.raises(ConfigError, match="'per-sona'"):
        ws.add_note("per-sona", "x")


def test_refs_parse_once_in_order_and_expand_in_place() -> None:
    assert parse_refs("基于@persona2和@hitpoint1，再看@persona2。") == ["persona2", "hitpoint1"]
    ws = WorkSpace()
    ws.add_note("persona", "目标用户：25岁白领")
    ws.add_note("persona", "hidden", referenceable=False)
    resolved = dict(ws.resolve("use @persona1 and @persona2 and @brand7"))
    assert resolved["persona1"] is not None and resolved["persona1"].content.startswith("目标")
    assert resolved["persona2"] is None and resolved["brand7"] is None
    assert list(ws.referenceable_notes()) == ["persona1"]
    text = ws.expand("use @persona1 @brand7", missing="MISSING")
    assert "@persona1:\n目标用户：25岁白领" in text and "@brand7: MISSING" in text


def test_chat_history_pairs_and_orchestrator_calls() -> None:
    cm = ConversationManager()
    for i in range(4):
        cm.add_user_message(f"u{i}")
        cm.add_concierge_response(f"c{i}", original_response=f"orig{i}")
    cm.start_orchestrator_call("task A")
    cm.add_round("obs", "think")
    cm.add_action("websearch", "search @persona1", ("websearch1",))
    cm.add_round("obs2", "think2")
    cm.add_action("hitpoint", "use @websearch1", ("hitpoint1",))
    cm.finish_orchestrator_call("done")
    cm.start_orchestrator_call("task B")
    recent = cm.recent_chat_history(limit=2)
    assert [e.content for e in recent] == ["u2", "c2", "u3", "c3"]
    assert recent[1].original_response == "orig2"
    calls = cm.recent_orchestrator_calls(limit=None)
    assert [c.message for c in calls] == ["task A", "task B"]
    assert calls[0].response == "done" and calls[1].response is None
    assert [r.step for r in calls[0].execution_records] == ["Round1:", "Round2:"]
    assert [a.agent for a in calls[0].actions()] == ["websearch", "hitpoint"]
    assert [c.message for c in cm.recent_orchestrator_calls(limit=1)] == ["task B"]
    assert cm.execution_log() == [] and len(cm.execution_log(0)) == 2


def _filled() -> tuple[WorkSpace, ConversationManager]:
    ws = WorkSpace()
    ws.add_note("persona", "目标用户：25岁白领", source="persona")
    ws.add_note("persona", "second", review_status="pending")
    ws.add_note("material", "brand book", referenceable=False)
    ws.tactics = "先调研，再写作"
    cm = ConversationManager()
    cm.add_user_message("写一篇小红书")
    cm.start_orchestrator_call("campaign")
    cm.add_action("persona", "who?", ("persona1",))
    return ws, cm


def test_survives_a_restart_and_stays_in_its_scope(tmp_path: Path) -> None:
    path = tmp_path / "ws.db"
    ws, cm = _filled()
    store = SQLiteStore(path)
    ws.save(store, S1)
    cm.save(store, S1)
    store.close()
    store = SQLiteStore(path)
    back = WorkSpace.load(store, S1)
    assert back.notes == ws.notes and back.tactics == "先调研，再写作"
    assert back.add_note("persona", "third").id == "persona3"  # numbering continues
    assert ConversationManager.load(store, S1).to_dict() == cm.to_dict()
    other = WorkSpace.load(store, S2)
    assert len(other) == 0 and other.tactics is None
    assert ConversationManager.load(store, S2).history == []
    store.close()


def test_saving_again_replaces_not_duplicates() -> None:
    store = InMemoryStore()
    ws, _ = _filled()
    ws.save(store, S1)
    ws.update_note("persona2", content="changed", review_status="approved")
    ws.save(store, S1)
    back = WorkSpace.load(store, S1)
    assert len(back) == 3 and back.notes["persona2"].content == "changed"
    assert back.notes["persona2"].review_status == "approved"


def test_an_underscored_type_is_the_note_s_own_not_the_seed_s_id_rule() -> None:
    """The seed derives a type from an id (before the first ``_``): ``hit_point2`` would be
    ``hit``. A note carries its type, so numbering, @refs and a reload keep ``hit_point``."""
    ws = WorkSpace()
    ws.add_note("hit_point", "a")
    note = ws.add_note("hit_point", "b")
    assert (note.id, note.type) == ("hit_point2", "hit_point")
    assert [n.type for _, n in ws.resolve("see @hit_point2") if n] == ["hit_point"]
    store = InMemoryStore()
    ws.save(store, S1)
    again = WorkSpace.load(store, S1)
    assert again.add_note("hit_point", "c").id == "hit_point3"
