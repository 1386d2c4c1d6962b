"""A Session takes tasks itself (the seed's ``Session.add_task``), and its lifecycle and task
flow are events on the bus: paused, resumed, task added, task updated."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from loomctx import ConfigError, ContextController, HashingEmbedder, InMemoryStore, Session
from loomctx.bus import Envelope, InProcessEventBus
from loomctx.bus.redis import RedisEventBus, RedisOptions
from loomctx.events import RecordingSink, SessionPaused, SessionResumed, TaskAdded, TaskUpdated
from loomctx.servers import RedisServer
from loomctx.tasks import TaskStatus

KINDS = ("session_paused", "session_resumed", "task_added", "task_updated")


def session(**kw: object) -> Session:
    return Session("desk-1", agent="support", tenant="acme", embedder=HashingEmbedder(dim=64),
                   clock=lambda: 5.0, system_prompt="You are the support desk.", **kw)  # type: ignore[arg-type]


def test_a_session_takes_a_task_itself_and_its_builds_show_it() -> None:
    sink = RecordingSink()
    s = session(events=sink)
    t = s.add_task("Refund order 1001 once the box is back", metadata={"priority": "high"})
    s.add_message_sync("user", "Is my refund on its way?")
    text = s.build_sync(max_tokens=400).payload["messages"][0]["content"]
    assert f"### Your tasks\n- [{t.id}] Refund order 1001 once the box is back" in text
    assert [x.id for x in s.tasks.of(s.id, TaskStatus.PENDING)] == [t.id]
    s.complete_task(t.id)
    assert "Your tasks" not in str(s.build_sync(max_tokens=400).payload)
    added, updated = sink.of("task_added"), sink.of("task_updated")
    assert added == [TaskAdded(tenant="acme", session="desk-1", agent="support", task_id=t.id,
                               description=t.description, at=5.0)]
    assert updated == [TaskUpdated(tenant="acme", session="desk-1", agent="support",
                                   task_id=t.id, status="done", at=5.0)]
    with pytest.raises(ConfigError, match="no task 'nope'"):
        s.cancel_task("nope")
    s.end_sync()
    with pytest.raises(ConfigError, match="has ended, it cannot take a task"):
        s.add_task("too late")


def test_a_controller_adopts_the_tasks_a_session_took_before_it_was_registered() -> None:
    sink = RecordingSink()
    store = InMemoryStore()
    s = Session("desk-2", agent="support", store=store, embedder=HashingEmbedder(dim=64),
                events=sink, clock=lambda: 1.0)
    own = s.add_task("Call the carrier")
    c = ContextController("support", store=store, embedder=HashingEmbedder(dim=64))
    c.register(s)
    c.distribute_task("Check the weekend backlog")
    assert [t.description for t in c.tasks.of("desk-2")] == ["Call the carrier",
                                                              "Check the weekend backlog"]
    assert s.tasks is c.tasks  # one board: the controller's view and the session's agree
    s.add_message_sync("user", "hi")
    text = s.build_sync(max_tokens=400).payload["messages"][0]["content"]
    assert "Call the carrier" in text and "Check the weekend backlog" in text
    c.complete_task(s, own.id)
    assert [e.task_id for e in sink.of("task_added")] == [own.id, c.tasks.of("desk-2")[1].id]
    assert [(e.task_id, e.status) for e in sink.of("task_updated")] == [(own.id, "done")]
    asyncio.run(c.end_session(s))
    assert [e.status for e in sink.of("task_updated")] == ["done", "cancelled"]


def _flow(bus: object) -> list[object]:
    """Pause, resume and a task's life, emitted by a session whose sink is ``bus``; what one
    consumer group receives, in order."""
    async def main() -> list[object]:
        got: list[object] = []
        done = asyncio.Event()

        def handler(env: Envelope) -> None:
            got.append(env.event)
            if len(got) == 4:
                done.set()

        await bus.subscribe(KINDS, handler, group="ops")  # type: ignore[attr-defined]
        s = session(events=bus)
        await asyncio.to_thread(s.pause)
        t = await asyncio.to_thread(s.add_task, "Restock SKU-9")
        await asyncio.to_thread(s.resume)
        await asyncio.to_thread(s.cancel_task, t.id)
        await asyncio.wait_for(done.wait(), 10)
        await bus.aclose()  # type: ignore[attr-defined]
        return got
    return asyncio.run(main())


def _expected(got: list[object]) -> list[object]:
    task_id = next(e.task_id for e in got if isinstance(e, TaskAdded))
    base = {"tenant": "acme", "session": "desk-1", "agent": "support", "at": 5.0}
    return [SessionPaused(**base),
            TaskAdded(task_id=task_id, description="Restock SKU-9", **base),
            SessionResumed(**base), TaskUpdated(task_id=task_id, status="cancelled", **base)]


def test_pause_resume_and_task_events_reach_an_in_process_bus() -> None:
    got = _flow(InProcessEventBus())
    assert got == _expected(got)


def test_pause_resume_and_task_events_cross_redis(redis_server: RedisServer) -> None:
    bus = RedisEventBus(redis_server.url, stream_prefix=f"t-{uuid.uuid4().hex[:12]}",
                        redis_options=RedisOptions(block=0.2, batch=2))
    got = _flow(bus)
    assert got == _expected(got)


def test_resume_of_an_active_session_emits_nothing_and_an_ended_one_refuses() -> None:
    sink = RecordingSink()
    s = session(events=sink)
    s.resume()
    assert sink.of("session_resumed") == []
    s.pause()
    with pytest.raises(ConfigError, match="paused: resume"):
        s.add_message_sync("user", "hello?")
    s.resume()
    s.end_sync()
    with pytest.raises(ConfigError, match="has ended, it cannot resume"):
        s.resume()
    assert [e.kind for e in sink.events] == ["session_paused", "session_resumed",
                                             "session_ended"]
