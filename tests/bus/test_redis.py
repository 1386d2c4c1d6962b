"""The Redis Streams bus holds the EventBus contract against a real redis-server, and what only a
server can show: a dead consumer's events claimed back, the stream kept bounded, a restart of
Redis in the middle of a stream with nothing acknowledged lost."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from loomctx.bus import BusOptions
from loomctx.bus.redis import RedisEventBus, RedisOptions
from loomctx.servers import RedisServer
from loomctx.testing.bus_conformance import BusConformance, MakeBus


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
