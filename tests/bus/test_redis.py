"""The Redis Streams bus holds the EventBus contract against a real redis-server, and what only a
server can show: a dead consumer's events claimed back, the stream kept bounded, a restart of
Redis in the middle of a stream with nothing acknowledged lost."""

from __future__ import annotations

import asyncio
import json
import os
import select
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from loomctx.bus import Envelope
from loomctx.bus.redis import RedisEventBus, RedisOptions
from loomctx.errors import BusError, ConfigError
from loomctx.servers import RedisServer
from loomctx.testing.bus_conformance import BusConformance, MakeBus, turn


def _prefix() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def redis_bus(redis_server: RedisServer) -> Iterator[Callable[..., RedisEventBus]]:
    """``redis_bus(**kw)``: a RedisEventBus on the test server with a stream of its own."""

    def make(**kw: Any) -> RedisEventBus:
        kw.setdefault("stream_prefix", _prefix())
        return RedisEventBus(redis_server.url, **kw)

    yield make


class TestRedisBus(BusConformance):
    @pytest.fixture
    def make_bus(self, redis_bus: Callable[..., RedisEventBus]) -> MakeBus:
        return lambda options=None: redis_bus(
            options=options, redis_options=RedisOptions(block=0.2, batch=2))


CHILD = r"""
import asyncio, sys
from loomctx.bus.redis import RedisEventBus

async def main(url, prefix):
    bus = RedisEventBus(url, stream_prefix=prefix)

    async def handler(env):
        print("handling", env.id, flush=True)
        await asyncio.sleep(3600)  # never returns: the event stays pending

    await bus.subscribe(None, handler, group="workers", consumer="doomed")
    print("ready", flush=True)
    await asyncio.sleep(3600)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def _line(proc: subprocess.Popen[str], timeout: float = 60.0) -> str:
    """The child's next stdout line (fails instead of hanging when it never comes)."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "the child process said nothing"
    return proc.stdout.readline().strip()


def test_a_killed_consumers_event_is_claimed_back_by_another(redis_server: RedisServer) -> None:
    prefix = _prefix()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, redis_server.url, prefix],
                            stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert _line(proc) == "ready"

        async def main() -> tuple[str, str, list[tuple[str, str, int]], dict[str, int]]:
            bus = RedisEventBus(redis_server.url, stream_prefix=prefix,
                                redis_options=RedisOptions(claim_timeout=0.5, block=0.1))
            first = await bus.publish(turn(1))
            assert await asyncio.to_thread(_line, proc) == f"handling {first}"
            proc.send_signal(signal.SIGKILL)  # dies between reading and acknowledging
            await asyncio.to_thread(proc.wait)
            got: list[tuple[str, str, int]] = []
            await bus.subscribe(None, lambda e: got.append((e.id, e.consumer, e.attempt)),
                                group="workers", consumer="heir")
            second = await bus.publish(turn(2))
            await bus.drain(timeout=30)
            await bus.aclose()
            return first, second, got, bus.stats

        first, second, got, stats = asyncio.run(main())
    finally:
        proc.kill()
        proc.wait()
    assert sorted(got) == sorted([(first, "heir", 2), (second, "heir", 1)])
    assert stats["claimed"] == 1


def test_the_stream_stays_bounded(redis_bus: Callable[..., RedisEventBus],
                                  redis_server: RedisServer) -> None:
    async def main() -> tuple[int, int]:
        bus = redis_bus(maxlen=50)
        for i in range(600):
            await bus.publish(turn(i))
        length = await bus._client.xlen(bus.stream)
        node = int((await bus._client.config_get("stream-node-max-entries"))
                   ["stream-node-max-entries"])
        await bus.aclose()
        return length, node

    length, node = asyncio.run(main())
    # "~ MAXLEN" trims whole macro nodes: at most one node's worth above the bound
    assert 50 <= length <= 50 + node < 600


def test_a_redis_restart_mid_stream_loses_no_acknowledged_event() -> None:
    server = RedisServer(appendonly=True)
    server.start()
    try:
        async def main() -> tuple[list[str], list[int], dict[str, int], dict[str, int], bool]:
            bus = RedisEventBus(server.url, stream_prefix=_prefix(), redis_options=RedisOptions(
                block=0.2, publish_timeout=30.0, reconnect_max_delay=0.2))
            handled: dict[str, int] = {}

            def handler(env: Envelope) -> None:
                handled[env.id] = handled.get(env.id, 0) + 1

            await bus.subscribe(None, handler, group="g")
            ok: list[str] = []
            failed: list[int] = []

            async def publisher() -> None:
                for i in range(300):
                    try:
                        ok.append(await bus.publish(turn(i)))
                    except BusError:
                        failed.append(i)
                    await asyncio.sleep(0.002)

            task = asyncio.create_task(publisher())
            await asyncio.sleep(0.2)
            mid_stream = not task.done()
            await asyncio.to_thread(server.kill)  # kill -9: only what was fsynced survives
            await asyncio.sleep(0.5)
            await asyncio.to_thread(server.start)
            await task
            await bus.drain(timeout=60)
            await bus.aclose()
            return ok, failed, handled, bus.stats, mid_stream

        ok, failed, handled, stats, mid_stream = asyncio.run(main())
    finally:
        server.close()
    assert mid_stream and stats["reconnects"] > 0
    assert failed == [] and len(set(ok)) == 300  # publishers retried through the outage
    assert set(handled) == set(ok)  # every acknowledged event handled, nothing invented


def test_publishing_with_redis_down_raises_and_emit_failures_surface() -> None:
    server = RedisServer()
    server.start()
    try:
        async def main() -> list[dict[str, Any]]:
            bus = RedisEventBus(server.url, stream_prefix=_prefix(),
                                redis_options=RedisOptions(publish_timeout=0.3))
            await bus.publish(turn(0))
            await asyncio.to_thread(server.stop)
            with pytest.raises(BusError, match=r"not published.*unreachable"):
                await bus.publish(turn(1))
            bus.emit(turn(2))
            with pytest.raises(BusError, match="1 emitted events could not be sent"):
                await bus.flush()
            await bus.aclose(drain=False)
            return bus.unsent

        unsent = asyncio.run(main())
    finally:
        server.close()
    assert [e["data"]["turn"] for e in unsent] == [2]


def test_an_unreadable_entry_is_parked_and_later_events_go_on(
        redis_bus: Callable[..., RedisEventBus]) -> None:
    async def main() -> tuple[list[int], list[dict[bytes, bytes]], list[Any]]:
        bus = redis_bus(redis_options=RedisOptions(block=0.2))
        got: list[int] = []
        await bus.subscribe(None, lambda env: got.append(env.event.turn), group="g")
        future = {"id": "f1", "kind": "from_a_newer_loomctx", "version": 1, "data": {}}
        await bus._client.xadd(bus.stream, {"e": json.dumps(future)})
        await bus.publish(turn(5))
        await bus.drain()
        parked = [f for _, f in await bus._client.xrange(bus.dead_stream)]
        letters = await bus.read_dead_letters()
        await bus.aclose()
        return got, parked, letters

    got, parked, letters = asyncio.run(main())
    assert got == [5] and letters == []
    [entry] = parked
    assert b"from_a_newer_loomctx" in entry[b"raw"] and b"unknown event kind" in entry[b"error"]


def test_options_and_urls_are_checked() -> None:
    with pytest.raises(ConfigError, match="redis://"):
        RedisEventBus("http://localhost:6379")
    with pytest.raises(ConfigError, match="maxlen=0"):
        RedisEventBus("redis://127.0.0.1:1/0", maxlen=0)
    with pytest.raises(ConfigError, match="claim_timeout=0"):
        RedisOptions(claim_timeout=0)


WORKER = r"""
import asyncio, sys
import redis.asyncio as aioredis
from loomctx.bus.redis import RedisEventBus, RedisOptions

async def main(url, prefix, name):
    effects = aioredis.Redis.from_url(url)
    bus = RedisEventBus(url, stream_prefix=prefix,
                        redis_options=RedisOptions(claim_timeout=0.5, block=0.1, batch=2))

    async def handler(env):
        await asyncio.sleep(0.005)
        await effects.hincrby(prefix + ":effects", env.id, 1)

    await bus.subscribe(None, handler, group="workers", consumer=name)
    print("ready", flush=True)
    await asyncio.sleep(3600)

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
"""


def test_consumer_processes_killed_at_random_lose_no_event(redis_server: RedisServer) -> None:
    """4 consumer processes, 2 of them kill -9ed mid-stream at seeded random moments: every
    published event is handled (its effect recorded) by the survivors."""
    import random

    import redis

    rng = random.Random(8)
    prefix = _prefix()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, redis_server.url, prefix, f"w{i}"],
                              stdout=subprocess.PIPE, text=True, env=env) for i in range(4)]
    client = redis.Redis.from_url(redis_server.url)
    try:
        for p in procs:
            assert _line(p) == "ready"
        victims = rng.sample(procs, 2)
        kill_at = sorted(rng.sample(range(20, 180), 2))

        async def publish() -> list[str]:
            bus = RedisEventBus(redis_server.url, stream_prefix=prefix)
            ids = []
            for i in range(200):
                if i in kill_at:
                    victims[kill_at.index(i)].send_signal(signal.SIGKILL)
                ids.append(await bus.publish(turn(i)))
                await asyncio.sleep(0.002)
            await bus.aclose(drain=False)
            return ids

        ids = asyncio.run(publish())
        deadline = time.monotonic() + 60
        while client.hlen(f"{prefix}:effects") < len(ids) and time.monotonic() < deadline:
            time.sleep(0.1)
        effects = {k.decode(): int(v) for k, v in
                   client.hgetall(f"{prefix}:effects").items()}
    finally:
        for p in procs:
            p.kill()
            p.wait()
        client.close()
    assert set(effects) == set(ids)  # every event handled, none invented
    assert all(n >= 1 for n in effects.values())
