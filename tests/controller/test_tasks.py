"""Session tasks kept by the controller, and distribution: broadcast or by a predicate."""

from __future__ import annotations

import asyncio
import json

import pytest

from loomctx import ConfigError, HashingEmbedder, InMemoryStore, SessionState
from loomctx.controller import ContextController, SessionInfo, Task, TaskStatus


@pytest.fixture
def controller() -> ContextController:
    c = ContextController("ops", store=InMemoryStore(), embedder=HashingEmbedder())
    c.create_session("eu", metadata={"region": "eu"})
    c.create_session("us", metadata={"region": "us"})
    c.create_session("eu2", metadata={"region": "eu"})
    return c


def test_add_task_keeps_order_and_status(controller: ContextController) -> None:
    first = controller.add_task("eu", "Check the Berlin delay")
    second = controller.add_task("eu", Task(description="File the report", id="r1"))
    assert [t.id for t in controller.tasks.of("eu")] == [first.id, "r1"]
    assert controller.tasks.of("us") == []
    done = controller.complete_task("eu", "r1")
    assert done.status is TaskStatus.DONE
    assert [t.id for t in controller.tasks.of("eu", TaskStatus.PENDING)] == [first.id]
    assert second.status is TaskStatus.PENDING  # tasks are values: the old one is unchanged
    with pytest.raises(ConfigError, match="already has task 'r1'"):
        controller.add_task("eu", Task(description="again", id="r1"))
    with pytest.raises(ConfigError, match="has no task 'nope'"):
        controller.complete_task("eu", "nope")


def test_broadcast_reaches_every_session_that_has_not_ended(
        controller: ContextController) -> None:
    controller.sessions["us"].pause()
    asyncio.run(controller.end_session("eu2"))
    got = controller.distribute_task("Report stock levels")
    assert got == ["eu", "us"]  # paused sessions get tasks; ended ones do not
    assert [t.description for t in controller.tasks.of("us")] == ["Report stock levels"]
    assert controller.tasks.of("eu2") == []


def test_filtered_by_metadata_and_state(controller: ContextController) -> None:
    got = controller.distribute_task("EU only", predicate=lambda s: s.metadata["region"] == "eu")
    assert got == ["eu", "eu2"]
    assert controller.tasks.of("us") == []
    controller.sessions["eu"].pause()

    def active_eu(s: SessionInfo) -> bool:
        return s.state is SessionState.ACTIVE and s.metadata["region"] == "eu"

    assert controller.distribute_task("active EU", predicate=active_eu) == ["eu2"]
    # The predicate sees the pending count too: give to sessions with under 2 pending tasks.
    assert controller.distribute_task("light load", predicate=lambda s: s.pending < 2) == \
        ["eu", "us"]


def test_distribute_to_named_sessions_keeps_one_task_id(controller: ContextController) -> None:
    task = Task(description="Shared job", id="job-7")
    assert controller.distribute_task(task, sessions=["us", "eu2"]) == ["us", "eu2"]
    assert [t.id for t in controller.tasks.of("us")] == ["job-7"]
    assert [t.id for t in controller.tasks.of("eu2")] == ["job-7"]
    assert controller.tasks.of("eu") == []


def test_ending_a_session_cancels_its_pending_tasks(controller: ContextController) -> None:
    t = controller.add_task("us", "Pending work")
    asyncio.run(controller.end_session("us"))
    assert controller.tasks.of("us")[0].status is TaskStatus.CANCELLED
    assert controller.tasks.of("us")[0].id == t.id
    with pytest.raises(ConfigError, match="has ended"):
        controller.add_task("us", "Too late")


def test_bad_tasks_and_unknown_sessions_are_refused(controller: ContextController) -> None:
    with pytest.raises(ConfigError, match="non-empty description"):
        controller.add_task("eu", " ")
    with pytest.raises(ConfigError, match="'ghost' is not registered"):
        controller.add_task("ghost", "work")
    with pytest.raises(ConfigError, match="set by the controller"):
        controller.create_session("x", agent="other")


def _rendered(session, query: str | None = None) -> str:
    result = session.build_sync(query, max_tokens=800)
    return json.dumps(result.payload, ensure_ascii=False)


def test_a_distributed_task_reaches_each_target_sessions_next_build(
        controller: ContextController) -> None:
    for sid in ("eu", "us", "eu2"):
        controller.sessions[sid].add_message_sync("user", "Good morning, anything new?")
    got = controller.distribute_task(Task(description="Count the pallets in bay 4", id="p4"),
                                     predicate=lambda s: s.metadata["region"] == "eu")
    assert got == ["eu", "eu2"]
    for sid in ("eu", "eu2"):
        text = _rendered(controller.sessions[sid])  # a turn build, as the agent loop makes
        assert "Count the pallets in bay 4" in text and "[p4]" in text
        report = controller.sessions[sid].build_sync("What is there to do?", max_tokens=800)
        row = next(r for r in report.report.items if r.id == "tasks:pending")
        assert row.included and row.source == "tasks"
    assert "Count the pallets" not in _rendered(controller.sessions["us"])
    # Done, it leaves the context.
    controller.complete_task("eu", "p4")
    assert "Count the pallets" not in _rendered(controller.sessions["eu"])
    assert "Count the pallets" in _rendered(controller.sessions["eu2"])


def test_a_registered_session_shows_its_tasks_too(embedder) -> None:
    from loomctx import Session

    store = InMemoryStore()
    c = ContextController("ops", store=store, embedder=embedder)
    own = Session("mine", agent="ops", store=store, embedder=c.embedder)
    c.register(own)
    c.register(own)  # registering again adds no second source
    own.add_message_sync("user", "Hello")
    c.add_task(own, "Call the Hamburg depot")
    assert "Call the Hamburg depot" in _rendered(own)
    assert sum(s.name == "tasks" for s in own.builder.sources) == 1


def test_many_tasks_are_capped_in_the_context(controller: ContextController) -> None:
    for i in range(12):
        controller.add_task("us", Task(description=f"Job number {i}", id=f"j{i}"))
    controller.sessions["us"].add_message_sync("user", "What next?")
    text = _rendered(controller.sessions["us"])
    assert "Job number 7" in text and "Job number 8" not in text
    assert "4 more pending tasks" in text
