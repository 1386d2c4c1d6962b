"""``InheritedSource``: a sub-agent's builds recall from its parent's memory, read-only."""

from __future__ import annotations

import json

import pytest

from loomctx import ConfigError, InheritedSource
from loomctx.stores.memory import InMemoryStore
from loomctx.stores.protocol import Scope

PARENT = [("user", "Plan the Lisbon offsite for the sales team in March."),
          ("assistant", "Booked: the venue is Palacio Chiado, budget capped at 40,000 EUR."),
          ("user", "Good. Now split the work: one helper handles catering.")]


def _text(result) -> str:
    return json.dumps(result.payload, ensure_ascii=False)


@pytest.fixture
def family(make_session):
    store = InMemoryStore()
    parent = make_session(id="lead", agent="planner", store=store)
    for role, text in PARENT:
        parent.add_message_sync(role, text)
    child = make_session(id="catering", agent="caterer", store=store,
                         sources=[InheritedSource(parent)])
    return parent, child, store


def test_the_sub_agent_sees_its_parents_memory(family) -> None:
    _, child, _ = family
    child.add_message_sync("user", "Find a caterer near the venue. What is the venue again?")
    for built in (child.build_sync(max_tokens=1500),  # a turn, as the agent loop builds it
                  child.build_sync("Which venue was booked and what is the budget?",
                               max_tokens=1500)):
        assert "Palacio Chiado" in _text(built)
        row = next(r for r in built.report.items if r.source == "inherited" and r.included)
        assert row.id.startswith("inherited/lead/")


def test_without_a_question_it_shows_the_parents_newest_messages(family, collect) -> None:
    parent, _, _ = family
    items = collect(InheritedSource(parent, recent=2))
    assert [it.content for it in items] == [text for _, text in PARENT[1:]]


def test_read_only_nothing_flows_back_to_the_parent(family) -> None:
    parent, child, store = family
    before = list(store.scan(scope=parent.memory.scope))
    child.add_message_sync("user", "Secret caterer shortlist: Cozinha Lumiar.")
    child.build_sync("What is the venue?", max_tokens=1500)
    child.end_sync()
    assert list(store.scan(scope=parent.memory.scope)) == before
    assert len(parent.memory.records) == len(PARENT)
    parent.add_message_sync("user", "Any caterer news?")
    assert "Cozinha Lumiar" not in _text(parent.build_sync(max_tokens=1500))
    assert "Cozinha Lumiar" not in _text(parent.build_sync("caterer shortlist", max_tokens=1500))
    # The child's messages stay in the child's scope.
    assert store.count(scope=Scope(agent="caterer", session="catering")) > 0


def test_bad_arguments_are_refused(family) -> None:
    parent, _, _ = family
    with pytest.raises(ConfigError, match="parent's Session or TieredMemory"):
        InheritedSource(object())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="share must be"):
        InheritedSource(parent, share=2)
    with pytest.raises(ConfigError, match="limit must be"):
        InheritedSource(parent, limit=-1)
