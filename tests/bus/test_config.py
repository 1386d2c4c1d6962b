"""A bus from a URL: memory:// (or none) is in process, redis:// is Redis Streams, else refused."""

from __future__ import annotations

import asyncio

import pytest

from loomctx.bus import BusOptions, InProcessEventBus, open_bus
from loomctx.bus.redis import RedisEventBus
from loomctx.errors import ConfigError
from loomctx.servers import RedisServer
from loomctx.testing.bus_conformance import turn


def test_no_url_and_memory_give_the_in_process_bus() -> None:
    assert isinstance(open_bus(None), InProcessEventBus)
    bus = open_bus("memory://", options=BusOptions(max_attempts=5))
    assert isinstance(bus, InProcessEventBus) and bus.options.max_attempts == 5


def test_a_redis_url_gives_a_working_redis_bus(redis_server: RedisServer) -> None:
    async def main() -> tuple[object, list[int]]:
        bus = open_bus(redis_server.url, stream_prefix="config-test", maxlen=10)
        got: list[int] = []
        await bus.subscribe(None, lambda env: got.append(env.event.turn), group="g")
        await bus.publish(turn(3))
        await bus.aclose()
        return bus, got

    bus, got = asyncio.run(main())
    assert isinstance(bus, RedisEventBus) and bus.maxlen == 10 and got == [3]


@pytest.mark.parametrize("url", ["kafka://broker:9092", "redis-cluster", "", "http://x"])
def test_other_urls_are_refused_with_the_schemes_to_use(url: str) -> None:
    with pytest.raises(ConfigError, match=r"memory://.*redis://"):
        open_bus(url)


def test_redis_options_on_a_memory_bus_are_refused() -> None:
    with pytest.raises(ConfigError, match="stream_prefix"):
        open_bus("memory://", stream_prefix="x")
