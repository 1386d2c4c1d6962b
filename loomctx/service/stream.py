"""The tenant's event stream: server-sent events fed by the service's event bus.

Sessions emit their events (messages added, builds, model calls, session ended) into the
service's :class:`~loomctx.bus.protocol.EventBus`. One consumer group, ``loomctx-service-sse``,
hands each event to the open streams of the event's tenant only; each stream has a bounded
queue, and a stream too slow to keep up loses its oldest events rather than stalling the bus.
A build report travels as its totals (the full report is ``GET /v1/loomctx/builds/{id}``).

On a bus shared by processes (Redis) each process reads every process's events, and reading
one costs a read, a decode and an acknowledgement: paid for every event by every process, that
grew the work of a request with the number of ``serve --workers``. So a process reads the bus
only while one of its streams is open: its group is made when its first stream opens (a stream
gets the events from then on) and removed when its last one closes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

from loomctx.bus.codec import encode
from loomctx.bus.inprocess import InProcessEventBus
from loomctx.bus.protocol import Envelope, EventBus
from loomctx.errors import LoomctxError

log = logging.getLogger("loomctx.service")

GROUP = "loomctx-service-sse"
QUEUE = 1000
"""Events a stream may hold before its oldest are dropped."""


class EventHub:
    """Fans the bus's events out to per-tenant stream queues."""

    def __init__(self) -> None:
        self._queues: dict[str, set[asyncio.Queue[dict[str, Any]]]] = {}
        self.dropped = 0
        """Events a slow stream lost (its queue was full)."""
        self._bus: EventBus | None = None
        self._group: str | None = None
        self._streams = 0
        self._turn = asyncio.Lock()
        """Held while the group is made or removed (one at a time)."""
        self._closing: set[asyncio.Task[None]] = set()

    @property
    def reading(self) -> bool:
        """Whether this process reads the bus now."""
        return self._group is not None

    async def attach(self, bus: EventBus) -> None:
        """Feed streams from ``bus``: an in-process bus is read from now on; a bus shared by
        processes (Redis) while a stream is open, each process a group of its own, since a
        group hands each event to one of its consumers only and every process has streams
        to feed."""
        self._bus = bus
        if isinstance(bus, InProcessEventBus):
            await bus.subscribe(None, self._handle, group=GROUP)
            self._group = GROUP

    async def detach(self, bus: EventBus) -> None:
        """Stop reading ``bus``; a group of this process's own is removed from the bus."""
        async with self._turn:
            await self._forget()
        self._bus = None

    async def _forget(self) -> None:
        forget = getattr(self._bus, "forget_group", None)
        group = self._group
        try:  # ``reading`` stays true until the group is gone from the bus
            if group is not None and group != GROUP and forget is not None:
                await forget(group)
        finally:
            self._group = None

    async def _opened(self) -> None:
        """A stream opens: the bus is read from now on (a group of this process made)."""
        self._streams += 1
        try:
            async with self._turn:
                if self._group is None and self._bus is not None:
                    group = f"{GROUP}-{uuid.uuid4().hex}"
                    await self._bus.subscribe(None, self._handle, group=group)
                    self._group = group
        except BaseException:
            self._closed()
            raise

    def _closed(self) -> None:
        """A stream closed: the last one's group goes (in a task: a stream's end may be its
        cancellation)."""
        self._streams -= 1
        if self._streams == 0 and self._group not in (None, GROUP):
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # finalised after its loop: the process is ending
                return
            task = loop.create_task(self._idle())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def _idle(self) -> None:
        async with self._turn:
            if self._streams == 0:
                try:
                    await self._forget()
                except LoomctxError as exc:  # Redis away: the group stays, said in the log
                    log.warning("could not remove the event group of this process: %s", exc)

    def _handle(self, envelope: Envelope) -> None:
        event = envelope.event
        queues = self._queues.get(event.tenant)
        if not queues:
            return
        data = encode(event, event_id=envelope.id)
        report = data["data"].pop("report", None)
        if isinstance(report, dict):
            data["data"]["report"] = {k: report.get(k) for k in
                                      ("tokens", "budget", "prefix_tokens",
                                       "reused_prefix_tokens")}
        for q in queues:
            if q.full():
                q.get_nowait()
                self.dropped += 1
            q.put_nowait(data)

    async def stream(self, tenant: str, kinds: frozenset[str] | None,
                     heartbeat: float = 15.0) -> AsyncIterator[bytes]:
        """SSE frames of ``tenant``'s events (of ``kinds``), until the client goes away."""
        q: asyncio.Queue[dict[str, Any]] = asyncio.Queue(QUEUE)
        self._queues.setdefault(tenant, set()).add(q)
        try:
            await self._opened()
        except BaseException:
            self._queues[tenant].discard(q)
            raise
        try:
            yield b": connected\n\n"
            while True:
                try:
                    data = await asyncio.wait_for(q.get(), heartbeat)
                except asyncio.TimeoutError:
                    yield b": keep-alive\n\n"
                    continue
                if kinds is not None and data["kind"] not in kinds:
                    continue
                yield (f"id: {data['id']}\nevent: {data['kind']}\n"
                       f"data: {json.dumps(data, ensure_ascii=False)}\n\n").encode()
        finally:
            self._queues[tenant].discard(q)
            self._closed()


__all__ = ["GROUP", "EventHub"]
