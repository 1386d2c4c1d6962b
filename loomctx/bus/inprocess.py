"""``InProcessEventBus``: the embedded default :class:`~loomctx.bus.protocol.EventBus` on asyncio.

One log of ``(id, event)`` in publish order, one cursor per consumer group, one worker task per
group that hands each event to a consumer and acknowledges it (moves the cursor) only after the
handler returns. Entries every group has passed are trimmed. It is also an
:class:`~loomctx.events.EventSink`: ``Session(events=bus)`` works from sync code, on any thread
(``emit`` queues the event onto the bus's loop and returns).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from collections import OrderedDict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from loomctx.bus.codec import check_event, decode, encode, new_event_id
from loomctx.bus.protocol import DeadLetter, Envelope, Handler
from loomctx.errors import ConfigError
from loomctx.events import Event
from loomctx.retry import exact

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class BusOptions:
    """How hard a bus tries before it parks an event, and what it remembers."""

    max_attempts: int = 3
    """Tries per event and group (the first delivery included) before it is dead-lettered."""
    retry_delay: float = 0.0
    """Seconds before the first retry; doubled for each further retry."""
    dedup_window: int = 100_000
    """Acknowledged event ids each group remembers, to skip a duplicate publish."""
    roundtrip: bool = False
    """Deliver what the codec would carry between processes (encode → decode) instead of the
    published object: tests a consumer against the Redis backend's view of events."""

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ConfigError(f"max_attempts={self.max_attempts!r}: give at least 1")
        if self.retry_delay < 0:
            raise ConfigError(f"retry_delay={self.retry_delay!r}: give 0 or more seconds")
        if self.dedup_window < 1:
            raise ConfigError(f"dedup_window={self.dedup_window!r}: give at least 1")


@dataclass
class _Consumer:
    name: str
    kinds: frozenset[str] | None
    handler: Handler


@dataclass
class _Group:
    name: str
    cursor: int
    consumers: list[_Consumer] = field(default_factory=list)
    seen: OrderedDict[str, None] = field(default_factory=OrderedDict)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    turn: int = 0
    task: asyncio.Task[None] | None = None


class InProcessEventBus:
    """Delivers events to consumer groups in this process (see the ``EventBus`` contract)."""

    def __init__(self, options: BusOptions | None = None) -> None:
        self.options = options or BusOptions()
        self.dead_letters: list[DeadLetter] = []
        """Events a handler kept failing on, in the order they were parked."""
        self._log: deque[tuple[str, Event]] = deque()
        self._base = 0
        self._groups: dict[str, _Group] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._closed = False

    def emit(self, event: Event) -> None:
        """The :class:`~loomctx.events.EventSink` hook: queue ``event`` with a new id."""
        self._accept(new_event_id(), event)

    async def publish(self, event: Event, *, event_id: str | None = None) -> str:
        event_id = event_id or new_event_id()
        self._accept(event_id, event)
        return event_id

    async def subscribe(self, kinds: str | Iterable[str] | None, handler: Handler, *,
                        group: str, consumer: str | None = None) -> None:
        if self._closed:
            raise ConfigError("subscribe on a closed event bus: create a new bus")
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._loop is None:
                self._loop = loop
            elif self._loop is not loop:
                raise ConfigError("an InProcessEventBus serves one event loop: subscribe from "
                                  "the loop it was first subscribed on")
            g = self._groups.get(group)
            if g is None:
                g = self._groups[group] = _Group(name=group, cursor=self._base + len(self._log))
                g.task = loop.create_task(self._run(g), name=f"loomctx-bus-{group}")
            wanted = None if kinds is None else frozenset([kinds] if isinstance(kinds, str)
                                                         else kinds)
            g.consumers.append(_Consumer(consumer or f"{group}-{len(g.consumers)}", wanted,
                                         handler))

    @property
    def backlog(self) -> int:
        """Events held because some group has not acknowledged them yet (0 once drained)."""
        return len(self._log)

    async def pending(self, group: str) -> int:
        """Events published since ``group`` subscribed that it has not acknowledged yet."""
        g = self._groups.get(group)
        return 0 if g is None else self._base + len(self._log) - g.cursor

    async def read_dead_letters(self, group: str | None = None) -> list[DeadLetter]:
        """The dead letters (of ``group`` only when given), oldest first."""
        return [d for d in self.dead_letters if group is None or d.envelope.group == group]

    async def drain(self) -> None:
        """Wait until every group has handled (or dead-lettered) every event published so far."""
        await asyncio.sleep(0)  # let emits queued from other threads land first
        while any(g.cursor < self._base + len(self._log) for g in self._groups.values()):
            await asyncio.sleep(0.001)

    async def aclose(self, *, drain: bool = True) -> None:
        """Stop delivery (after handling what was published, unless ``drain=False``)."""
        if self._closed:
            return
        if drain:
            await self.drain()
        self._closed = True
        tasks = [g.task for g in self._groups.values() if g.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _accept(self, event_id: str, event: Event) -> None:
        if self._closed:
            raise ConfigError(f"event {event.kind!r} published to a closed event bus: "
                              "publish before aclose(), or create a new bus")
        check_event(event)
        if self.options.roundtrip:
            event_id, event = decode(encode(event, event_id=event_id))
        with self._lock:
            loop = self._loop
        if loop is None:
            return  # no group yet: nobody subscribed, like a stream with no consumer group
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._append(event_id, event)
            return
        try:
            loop.call_soon_threadsafe(self._append, event_id, event)
        except RuntimeError as exc:  # the subscribers' loop has ended
            raise ConfigError(f"event {event.kind!r} published after the bus's event loop "
                              "closed: await bus.aclose() before the loop ends") from exc

    def _append(self, event_id: str, event: Event) -> None:
        self._log.append((event_id, event))
        for g in self._groups.values():
            g.wake.set()

    async def _run(self, g: _Group) -> None:
        while True:
            while g.cursor < self._base + len(self._log):
                event_id, event = self._log[g.cursor - self._base]
                await self._deliver(g, event_id, event)
                g.cursor += 1  # the acknowledgement
                self._trim()
            g.wake.clear()
            await g.wake.wait()

    async def _deliver(self, g: _Group, event_id: str, event: Event) -> None:
        if event_id in g.seen:
            return
        takers = [c for c in g.consumers if c.kinds is None or event.kind in c.kinds]
        if takers:
            consumer = takers[g.turn % len(takers)]
            g.turn += 1
            await self._handle(g, consumer, event_id, event)
        g.seen[event_id] = None
        if len(g.seen) > self.options.dedup_window:
            g.seen.popitem(last=False)

    async def _handle(self, g: _Group, consumer: _Consumer, event_id: str, event: Event) -> None:
        for attempt in range(1, self.options.max_attempts + 1):
            envelope = Envelope(id=event_id, event=event, group=g.name, consumer=consumer.name,
                                attempt=attempt)
            try:
                result = consumer.handler(envelope)
                if inspect.isawaitable(result):
                    await result
                return
            except Exception as exc:
                if attempt == self.options.max_attempts:
                    self.dead_letters.append(DeadLetter(envelope=envelope, error=repr(exc)))
                    log.warning("event %s (%s) dead-lettered for group %r after %d attempts: %r",
                                event_id, event.kind, g.name, attempt, exc)
                    return
                await asyncio.sleep(exact(self.options.retry_delay).delay(attempt - 1))

    def _trim(self) -> None:
        low = min(g.cursor for g in self._groups.values())
        while self._base < low:
            self._log.popleft()
            self._base += 1


__all__ = ["BusOptions", "InProcessEventBus"]
