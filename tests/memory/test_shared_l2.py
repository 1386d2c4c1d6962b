"""The shared L2 pool: what one session of an agent found important reaches the agent's other
sessions' builds (tenant + agent scope), until it expires by ``l2_shared_ttl``."""

from __future__ import annotations

import json

from loomctx import MemoryOptions
from loomctx.stores.memory import InMemoryStore

DECISION = "DECIDED: the Rotterdam route switches to rail freight from June."
QUESTION = "How will the Rotterdam route ship from June?"
TTL = 3600.0


class KeywordImportance:
    """Messages saying DECIDED are important (0.9), the rest are not (0.1)."""

    def score(self, text: str, *, role: str | None = None) -> float:
        return 0.9 if "DECIDED" in text else 0.1


def _writer(make_session, store, **kw):
    """A session of agent ``ops`` whose decision was evicted from L1 into L2."""
    s = make_session(id="planning", agent="ops", store=store, importance=KeywordImportance(),
                     memory=MemoryOptions(l1_max_tokens=40, l2_shared_ttl=TTL), **kw)
    s.add_message_sync("user", DECISION)
    for i in range(6):
        s.add_message_sync("user", f"Small talk number {i} about the weather and lunch plans.")
    assert s.memory.l2_ids  # the decision is in L2 now
    return s


def _text(result) -> str:
    return json.dumps(result.payload, ensure_ascii=False)


def _shared(result) -> list:
    return [r for r in result.report.items if r.source == "L2_shared" and r.included]


def test_another_session_of_the_agent_sees_it_in_its_builds(make_session) -> None:
    store = InMemoryStore()
    _writer(make_session, store)
    other = make_session(id="ops-desk", agent="ops", store=store,
                         memory=MemoryOptions(l2_shared_ttl=TTL))
    other.add_message_sync("user", "Hi, a question about the routes.")
    built = other.build_sync(QUESTION, max_tokens=1200)
    assert "rail freight" in _text(built)
    assert _shared(built) and _shared(built)[0].id.startswith("L2/planning/")
    other.add_message_sync("user", QUESTION)  # a turn, as the agent loop builds it
    assert "rail freight" in _text(other.build_sync(max_tokens=1200))


def test_it_expires_by_ttl(make_session) -> None:
    store = InMemoryStore()
    _writer(make_session, store)
    other = make_session(id="ops-desk", agent="ops", store=store,
                         memory=MemoryOptions(l2_shared_ttl=TTL))
    said = other.clock()  # the fixed clock of the sessions: when the decision was said
    assert _shared(other.build_sync(QUESTION, max_tokens=1200, now=said + TTL - 1))
    late = other.build_sync(QUESTION, max_tokens=1200, now=said + TTL + 1)
    assert not _shared(late) and "rail freight" not in _text(late)


def test_not_across_agents_or_tenants_and_off_when_asked(make_session) -> None:
    store = InMemoryStore()
    _writer(make_session, store)
    for kw in ({"agent": "sales"}, {"agent": "ops", "tenant": "globex"},
               {"agent": "ops", "memory": MemoryOptions(l2_shared=False)}):
        s = make_session(id="ops-desk", store=store, **kw)
        assert "rail freight" not in _text(s.build_sync(QUESTION, max_tokens=1200))
    assert all(src.name != "L2_shared" for src in s.builder.sources)  # the switched-off one


def test_the_writing_session_does_not_see_its_own_l2_twice(make_session) -> None:
    store = InMemoryStore()
    writer = _writer(make_session, store)
    built = writer.build_sync(QUESTION, max_tokens=1200)
    assert not _shared(built) and "rail freight" in _text(built)  # via its own retrieval


def test_once_its_session_ends_it_leaves_the_pool(make_session) -> None:
    store = InMemoryStore()
    writer = _writer(make_session, store)
    writer.end_sync()  # L1/L2 move to L4
    later = make_session(id="ops-late", agent="ops", store=store,
                         memory=MemoryOptions(l2_shared_ttl=TTL))
    assert not _shared(later.build_sync(QUESTION, max_tokens=1200))
