"""The in-process bus holds the EventBus contract (the shared conformance suite), and what is
its own: round-robin between a group's consumers, the backlog a slow group holds, the codec
round trip, and sync session calls from another thread."""

from __future__ import annotations

import asyncio
import threading

import pytest

from loomctx import HashingEmbedder, Session
from loomctx.bus import BusOptions, Envelope, InProcessEventBus
from loomctx.errors import ConfigError
from loomctx.events import TurnStarted
from loomctx.testing.bus_conformance import BusConformance, MakeBus


def _turn(i: int) -> TurnStarted:
    return TurnStarted(tenant="t", session="s", turn=i, at=float(i))


class TestInProcessBus(BusConformance):
    @pytest.fixture
    def make_bus(self) -> MakeBus:
        return lambda options=None: InProcessEventBus(options)


def test_consumers_of_one_group_share_its_events() -> None:
    async def main() -> tuple[list[str], dict[str, list[str]]]:
        bus = InProcessEventBus()
        got: dict[str, list[str]] = {"c1": [], "c2": []}
        for name in got:
            await bus.subscribe(None, lambda env: got[env.consumer].append(env.id),
                                group="workers", consumer=name)
        ids = [await bus.publish(_turn(i)) for i in range(6)]
        await bus.aclose()
        return ids, got

    ids, got = asyncio.run(main())
    assert sorted(got["c1"] + got["c2"]) == sorted(ids)
    assert got["c1"] and got["c2"]


def test_acknowledged_events_are_released_and_a_slow_group_holds_them() -> None:
    async def main() -> tuple[int, int, int]:
        bus = InProcessEventBus()
        gate = asyncio.Event()

        async def slow(env: Envelope) -> None:
            await gate.wait()

        await bus.subscribe(None, lambda env: None, group="fast")
        await bus.subscribe(None, slow, group="slow")
        for i in range(10):
            await bus.publish(_turn(i))
        await asyncio.sleep(0.01)
        held = bus.backlog
        gate.set()
        await bus.drain()
        after = bus.backlog
        await bus.aclose()
        return held, after, len(bus.dead_letters)

    held, after, dead = asyncio.run(main())
    assert held == 10 and after == 0 and dead == 0


def test_roundtrip_delivers_what_the_codec_carries() -> None:
    async def main() -> list[object]:
        bus = InProcessEventBus(BusOptions(roundtrip=True))
        got: list[object] = []
        await bus.subscribe(None, lambda env: got.append(env.event), group="g")
        sent = _turn(7)
        await bus.publish(sent)
        await bus.aclose()
        return [sent, *got]

    sent, back = asyncio.run(main())
    assert back == sent and back is not sent


def test_a_closed_bus_refuses_events_and_options_are_checked() -> None:
    bus = InProcessEventBus()
    asyncio.run(bus.aclose())
    with pytest.raises(ConfigError, match="closed"):
        bus.emit(_turn(0))
    with pytest.raises(ConfigError, match="max_attempts=0"):
        BusOptions(max_attempts=0)


def test_a_session_delivers_its_events_to_a_subscriber() -> None:
    async def main() -> tuple[list[Envelope], Session]:
        bus = InProcessEventBus()
        got: list[Envelope] = []
        await bus.subscribe(None, got.append, group="observer")
        s = Session(embedder=HashingEmbedder(dim=64), events=bus, id="bus-s",
                    clock=lambda: 1_700_000_000.0)
        for i in range(40):
            await s.add_message("user", f"a fairly long message number {i} " * 10)
        await s.build(max_tokens=500)
        await s.end()
        await bus.aclose()
        return got, s

    got, s = asyncio.run(main())
    kinds = [env.event.kind for env in got]
    assert set(kinds) == {"message_added", "tier_moved", "build_completed", "session_ended"}
    assert kinds[-1] == "session_ended" and kinds[0] == "message_added"
    assert all(env.event.session == "bus-s" for env in got)
    assert len({env.id for env in got}) == len(got)
    moved = [i for env in got if env.event.kind == "tier_moved" for i in env.event.ids]
    assert moved and set(moved) <= {r.id for r in s.store.scan(scope=s.memory.scope)}


def test_sync_session_calls_from_another_thread_reach_the_bus_loop() -> None:
    async def main() -> tuple[list[str], set[int], int]:
        bus = InProcessEventBus()
        got: list[str] = []
        threads: set[int] = set()

        def handler(env: Envelope) -> None:
            threads.add(threading.get_ident())
            got.append(env.event.kind)

        await bus.subscribe(None, handler, group="observer")
        s = Session(embedder=HashingEmbedder(dim=64), events=bus, clock=lambda: 1.0)
        s.add_message_sync("user", "hello from sync code")  # runs on a worker thread's loop
        s.build_sync(max_tokens=300)
        s.end_sync()
        await bus.aclose()
        return got, threads, threading.get_ident()

    got, threads, loop_thread = asyncio.run(main())
    assert got[0] == "message_added" and "build_completed" in got and got[-1] == "session_ended"
    assert threads == {loop_thread}
