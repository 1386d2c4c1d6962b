"""The event stream's hub reads a shared bus only while one of its streams is open: every
process reading every event cost each request a read, a decode and an acknowledgement per
``serve`` process."""

from __future__ import annotations

import asyncio
import json
import uuid

import redis

from loomctx.bus.redis import RedisEventBus, RedisOptions
from loomctx.errors import BusError
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


class _SlowForget:
    """A bus shared by processes whose group removal waits for ``go`` (or fails)."""

    def __init__(self, fail: bool = False) -> None:
        self.go = asyncio.Event()
        self.groups: list[str] = []
        self.fail = fail

    async def subscribe(self, kinds: object, handler: object, *, group: str) -> None:
        self.groups.append(group)

    async def forget_group(self, group: str) -> None:
        await self.go.wait()
        if self.fail:
            raise BusError("redis://127.0.0.1:1 unreachable")
        self.groups.remove(group)


def test_the_hub_reads_until_its_group_is_gone_from_the_bus() -> None:
    async def scenario(fail: bool) -> None:
        bus, hub = _SlowForget(fail), EventHub()
        await hub.attach(bus)  # type: ignore[arg-type]
        frames = hub.stream("t", None)
        await anext(frames)
        assert hub.reading and len(bus.groups) == 1
        await frames.aclose()
        await asyncio.sleep(0.05)
        assert hub.reading  # the group is still on the bus: its removal has not ended
        bus.go.set()
        for _ in range(100):
            if not hub.reading:
                break
            await asyncio.sleep(0.01)
        # gone, or left on a bus that is away (said in the log): this process reads no more
        assert not hub.reading and len(bus.groups) == int(fail)

    asyncio.run(scenario(False))
    asyncio.run(scenario(True))
