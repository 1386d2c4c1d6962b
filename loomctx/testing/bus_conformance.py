"""One contract test class for every :class:`~loomctx.bus.protocol.EventBus` backend.

A backend's test module subclasses :class:`BusConformance` and overrides the ``make_bus``
fixture: a factory ``make_bus(options=None)`` returning a new, isolated bus (its own stream, for
a server-backed bus) each time it is called::

    class TestMyBus(BusConformance):
        @pytest.fixture
        def make_bus(self):
            return lambda options=None: MyBus(options=options)

Each test runs its own event loop (``asyncio.run``) and closes the buses it made. Besides the
protocol's methods, a backend offers the two read-backs these tests need:
``await bus.pending(group)`` (events the group has not acknowledged), ``await bus.drain()``
(wait until every group acknowledged everything) and ``await bus.read_dead_letters()``.
Needs pytest.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from loomctx.bus.inprocess import BusOptions
from loomctx.bus.protocol import Envelope, EventBus
from loomctx.errors import ConfigError
from loomctx.events import EventSink, TurnStarted
from loomctx.session import Session
from loomctx.testing import HashingEmbedder

MakeBus = Callable[..., Any]
"""``make_bus(options: BusOptions | None = None)`` → a new bus."""


def turn(i: int, session: str = "s") -> TurnStarted:
    """A small event whose ``turn`` tells events apart."""
    return TurnStarted(tenant="t", session=session, turn=i, at=float(i))


def turn_of(env: Envelope) -> int:
    """The ``turn`` of a delivered :func:`turn` event."""
    assert isinstance(env.event, TurnStarted), env.event
    return env.event.turn


@dataclasses.dataclass(frozen=True, kw_only=True)
class MadeUp:
    """Looks like an event, but no loomctx event has its kind."""

    kind: str = "made_up"
    version: int = 1


class BusConformance:
    """Every behaviour the ``EventBus`` docstring promises, against ``make_bus``."""

    @pytest.fixture
    def make_bus(self) -> MakeBus:
        raise NotImplementedError("override the make_bus fixture in the backend's test class")

    def test_it_is_an_event_bus_and_a_sink(self, make_bus: MakeBus) -> None:
        async def main() -> Any:
            bus = make_bus()
            await bus.aclose()
            return bus

        bus = asyncio.run(main())
        assert isinstance(bus, EventBus) and isinstance(bus, EventSink)

    def test_a_group_sees_events_in_publish_order(self, make_bus: MakeBus) -> None:
        async def main() -> list[int]:
            bus = make_bus()
            seen: list[int] = []

            async def handler(env: Envelope) -> None:
                await asyncio.sleep(0.001 * (turn_of(env) % 3))  # slower on some events
                seen.append(turn_of(env))

            await bus.subscribe("turn_started", handler, group="g")
            for i in range(30):
                await bus.publish(turn(i))
            await bus.aclose()
            return seen

        assert asyncio.run(main()) == list(range(30))

    def test_every_group_gets_every_event_of_its_kinds(self, make_bus: MakeBus) -> None:
        async def main() -> tuple[list[str], list[str], list[str], list[int]]:
            bus = make_bus()
            a: list[str] = []
            b: list[str] = []
            other: list[int] = []
            await bus.subscribe(None, lambda env: a.append(env.id), group="audit")
            await bus.subscribe(["turn_started"], lambda env: b.append(env.id), group="metrics")
            await bus.subscribe("message_added", lambda env: other.append(1), group="other")
            ids = [await bus.publish(turn(i)) for i in range(5)]
            await bus.aclose()
            return ids, a, b, other

        ids, a, b, other = asyncio.run(main())
        assert a == ids and b == ids and len(set(ids)) == 5
        assert other == []

    def test_within_a_group_each_event_goes_to_one_consumer(self, make_bus: MakeBus) -> None:
        async def main() -> tuple[list[str], dict[str, list[str]]]:
            bus = make_bus()
            got: dict[str, list[str]] = {"c1": [], "c2": []}

            async def handler(env: Envelope) -> None:
                await asyncio.sleep(0.002)
                got[env.consumer].append(env.id)

            for name in got:
                await bus.subscribe(None, handler, group="workers", consumer=name)
            ids = [await bus.publish(turn(i)) for i in range(20)]
            await bus.aclose()
            return ids, got

        ids, got = asyncio.run(main())
        assert sorted(got["c1"] + got["c2"]) == sorted(ids)

    def test_an_event_is_acknowledged_only_after_its_handler_returns(
            self, make_bus: MakeBus) -> None:
        async def main() -> tuple[int, int, list[int]]:
            bus = make_bus()
            gate = asyncio.Event()
            started = asyncio.Event()
            done: list[int] = []

            async def slow(env: Envelope) -> None:
                started.set()
                await gate.wait()
                done.append(turn_of(env))

            await bus.subscribe(None, slow, group="slow")
            for i in range(3):
                await bus.publish(turn(i))
            await asyncio.wait_for(started.wait(), 10)
            held = await bus.pending("slow")
            gate.set()
            await bus.drain()
            after = await bus.pending("slow")
            await bus.aclose()
            return held, after, done

        held, after, done = asyncio.run(main())
        assert held == 3 and after == 0 and done == [0, 1, 2]

    def test_a_failing_handler_is_retried_then_dead_lettered(self, make_bus: MakeBus) -> None:
        async def main() -> tuple[list[Any], list[tuple[int, int]], list[int]]:
            bus = make_bus(BusOptions(max_attempts=3))
            tries: list[tuple[int, int]] = []
            done: list[int] = []

            def handler(env: Envelope) -> None:
                tries.append((turn_of(env), env.attempt))
                if turn_of(env) == 1:
                    raise RuntimeError("boom")
                if turn_of(env) == 2 and env.attempt == 1:
                    raise RuntimeError("transient")
                done.append(turn_of(env))

            await bus.subscribe(None, handler, group="g")
            for i in range(4):
                await bus.publish(turn(i), event_id=f"e{i}")
            await bus.drain()
            dead = await bus.read_dead_letters()
            await bus.aclose()
            return dead, tries, done

        dead, tries, done = asyncio.run(main())
        assert tries == [(0, 1), (1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (3, 1)]
        assert done == [0, 2, 3]
        [letter] = dead
        assert letter.envelope.id == "e1" and letter.envelope.attempt == 3
        assert letter.envelope.event == turn(1) and "boom" in letter.error

    def test_the_same_id_published_twice_is_handled_once_per_group(
            self, make_bus: MakeBus) -> None:
        async def main() -> dict[str, list[str]]:
            bus = make_bus()
            got: dict[str, list[str]] = {"a": [], "b": []}
            for group in got:
                await bus.subscribe(None, lambda env, g=group: got[g].append(env.id),
                                    group=group)
            for event_id in ("x", "y", "x", "z", "y"):
                await bus.publish(turn(0), event_id=event_id)
            await bus.aclose()
            return got

        assert asyncio.run(main()) == {"a": ["x", "y", "z"], "b": ["x", "y", "z"]}

    def test_an_unknown_kind_is_refused(self, make_bus: MakeBus) -> None:
        async def main() -> None:
            bus = make_bus()
            try:
                with pytest.raises(ConfigError, match="MadeUp"):
                    await bus.publish(MadeUp())
                with pytest.raises(ConfigError, match="MadeUp"):
                    bus.emit(MadeUp())
            finally:
                await bus.aclose()

        asyncio.run(main())

    def test_a_closed_bus_refuses_events(self, make_bus: MakeBus) -> None:
        async def main() -> None:
            bus = make_bus()
            await bus.aclose()
            with pytest.raises(ConfigError, match="closed"):
                bus.emit(turn(0))
            with pytest.raises(ConfigError, match="closed"):
                await bus.publish(turn(0))

        asyncio.run(main())

    def test_a_session_delivers_its_events_in_order(self, make_bus: MakeBus) -> None:
        async def main() -> list[Envelope]:
            bus = make_bus()
            got: list[Envelope] = []
            await bus.subscribe(None, got.append, group="observer")
            s = Session(embedder=HashingEmbedder(dim=64), events=bus, id="bus-s",
                        clock=lambda: 1_700_000_000.0)
            for i in range(12):
                await s.add_message("user", f"a fairly long message number {i} " * 10)
            await s.build(max_tokens=400)
            await s.end()
            await bus.aclose()
            return got

        got = asyncio.run(main())
        kinds = [env.event.kind for env in got]
        assert kinds[0] == "message_added" and kinds[-1] == "session_ended"
        assert "build_completed" in kinds and kinds.count("message_added") == 12
        assert all(env.event.session == "bus-s" for env in got)
        assert len({env.id for env in got}) == len(got)


__all__ = ["BusConformance", "MadeUp", "MakeBus", "turn", "turn_of"]
