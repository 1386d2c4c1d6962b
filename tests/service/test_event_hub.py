"""The event stream's hub reads a shared bus only while one of its streams is open: every
process reading every event cost each request a read, a decode and an acknowledgement per
``serve`` process."""

from __future__ import annotations

import asyncio
import json
import uuid

import redis

from loomctx.bus.redis import RedisEventBus, RedisOptions
from loomctx.events import MessageAdded
from loomctx.servers import RedisServer
from loomctx.service.stream import EventHub


def _groups(url: str, stream: str) -> list[str]:
    client = redis.Redis.from_url(url)
    try:
        if not client.exists(stream):
            return []
        return [g["name"].decode() for g in client.xinfo_groups(stream)]
    finally:
        client.close()


def test_a_shared_bus_is_read_only_while_a_stream_is_open(redis_server: RedisServer) -> None:
    async def scenario() -> None:
        bus = RedisEventBus(redis_server.url, stream_prefix=f"hub-{uuid.uuid4().hex[:10]}",
                            redis_options=RedisOptions(block=0.1))
        hub = EventHub()
        try:
            await hub.attach(bus)
            bus.emit(MessageAdded(tenant="t", session="s", ids=("before",), at=0.0))
            await bus.flush()
            assert not hub.reading and _groups(redis_server.url, bus.stream) == []

            frames = hub.stream("t", None)
            assert await anext(frames) == b": connected\n\n"
            assert hub.reading and len(_groups(redis_server.url, bus.stream)) == 1
            second = hub.stream("t", None)
            await anext(second)
            assert len(_groups(redis_server.url, bus.stream)) == 1  # one group a process

            bus.emit(MessageAdded(tenant="t", session="s", ids=("after",), at=1.0))
            frame = await asyncio.wait_for(anext(frames), 10)
            data = json.loads(frame.decode().split("data: ", 1)[1])
            assert data["data"]["ids"] == ["after"]  # from the moment it opened

            await frames.aclose()
            await asyncio.sleep(0.2)
            assert hub.reading  # a stream is still open
            await second.aclose()
            for _ in range(100):
                if not hub.reading:
                    break
                await asyncio.sleep(0.05)
            assert not hub.reading and _groups(redis_server.url, bus.stream) == []

            again = hub.stream("t", None)
            await anext(again)
            assert hub.reading
            await again.aclose()
        finally:
            await hub.detach(bus)
            await bus.aclose()
        assert _groups(redis_server.url, bus.stream) == []

    asyncio.run(scenario())
