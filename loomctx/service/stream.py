"""The tenant's event stream: server-sent events fed by the service's event bus.

Sessions emit their events (messages added, builds, model calls, session ended) into the
service's :class:`~loomctx.bus.protocol.EventBus`. One consumer group, ``loomctx-service-sse``,
hands each event to the open streams of the event's tenant only; each stream has a bounded
queue, and a stream too slow to keep up loses its oldest events rather than stalling the bus.
A build report travels as its totals (the full report is ``GET /v1/loomctx/builds/{id}``).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

from loomctx.bus.codec import encode
from loomctx.bus.inprocess import InProcessEventBus
from loomctx.bus.protocol import Envelope, EventBus

GROUP = "loomctx-service-sse"
QUEUE = 1000
"""Events a stream may hold before its oldest are dropped."""


class EventHub:
    """Fans the bus's events out to per-tenant stream queues."""

    def __init__(self) -> None:
        self._queues: dict[str, set[asyncio.Queue[dict[str, Any]]]] = {}
        self.dropped = 0
        """Events a slow stream lost (its queue was full)."""
        self._group: str | None = None

    async def attach(self, bus: EventBus) -> None:
        """Read every event of ``bus``: on a bus shared by processes (Redis) each process is
        a group of its own, since a group hands each event to one of its consumers only and
        every process has streams to feed."""
        group = GROUP if isinstance(bus, InProcessEventBus) else f"{GROUP}-{uuid.uuid4().hex}"
        await bus.subscribe(None, self._handle, group=group)
        self._group = group

    async def detach(self, bus: EventBus) -> None:
        """Stop reading ``bus``; a group of this process's own is removed from the bus."""
        forget = getattr(bus, "forget_group", None)
        if self._group is not None and self._group != GROUP and forget is not None:
            await forget(self._group)
        self._group = None

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


__all__ = ["GROUP", "EventHub"]
