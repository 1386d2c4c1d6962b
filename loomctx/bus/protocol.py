"""The :class:`EventBus` protocol: typed events from many sessions to many consumers.

A session, builder or agent emits :mod:`loomctx.events` into an
:class:`~loomctx.events.EventSink`; an event bus is a sink that also carries the events to
subscribers, in this process (:class:`~loomctx.bus.inprocess.InProcessEventBus`) or across
processes (a Redis Streams backend). Both backends share this contract, shaped after Redis
Streams consumer groups so that moving from one to the other changes configuration only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from loomctx.events import Event


@dataclass(frozen=True, kw_only=True)
class Envelope:
    """One delivery of one event to one consumer of a group."""

    id: str
    """The event's unique id, given at publish time; the key an idempotent consumer dedups on."""
    event: Event
    group: str
    """The consumer group this delivery belongs to."""
    consumer: str
    """The consumer (within the group) the event was handed to."""
    attempt: int
    """1 for the first delivery to this group; higher when a failed handler is retried."""


Handler = Callable[[Envelope], Awaitable[None] | None]
"""A consumer: async (or plain) callable taking one :class:`Envelope`; returning acknowledges."""


@dataclass(frozen=True, kw_only=True)
class DeadLetter:
    """An event a group's handler kept failing on, parked instead of lost."""

    envelope: Envelope
    """The last delivery attempted (``attempt`` is the number of tries)."""
    error: str
    """``repr`` of the handler's last exception."""


@runtime_checkable
class EventBus(Protocol):
    """Publish typed, versioned events; deliver each to every consumer group subscribed to it.

    Contract:
    - Every event gets a unique id when published (``publish`` returns it; ``emit``, the
      :class:`~loomctx.events.EventSink` method sessions call, gives one too). Publishing the
      same id again (a producer's retry) is the same event: a group handles it once.
    - ``publish`` returns once the bus has accepted the event (appended to its log, or
      ``XADD`` acknowledged by the server), never after handling. A bus that cannot accept an
      event raises; it never drops one silently. ``emit`` is synchronous and quick (it queues),
      callable from any thread.
    - ``subscribe(kinds, handler, group=..., consumer=...)``: from then on, every event of those
      kinds (``None``: all kinds) published afterwards reaches the group. Every group gets every
      event; within one group each event goes to one of its consumers. A group sees events in
      publish order, one at a time per consumer.
    - Delivery is at least once. The event is acknowledged only after the handler returns;
      a handler that raises is retried a bounded number of times, then the event is parked as a
      :class:`DeadLetter` (and logged), never lost silently. A crash between handling and the
      acknowledgement means a redelivery (``attempt`` > 1, or a pending entry claimed back from
      a dead consumer), so handlers must be idempotent by :attr:`Envelope.id`; the bus skips ids
      a group has already acknowledged within its de-duplication window.
    - Events cross process boundaries through :mod:`loomctx.bus.codec` (JSON-safe dicts with
      kind, version and id); an event of an unknown kind or version is refused, not guessed.
    - ``aclose`` stops delivery and releases the bus's tasks and connections; publishing to a
      closed bus raises.
    """

    def emit(self, event: Event) -> None: ...

    async def publish(self, event: Event, *, event_id: str | None = None) -> str: ...

    async def subscribe(self, kinds: str | Iterable[str] | None, handler: Handler, *,
                        group: str, consumer: str | None = None) -> None: ...

    async def aclose(self) -> None: ...


__all__ = ["DeadLetter", "Envelope", "EventBus", "Handler"]
