"""One consumer's reader task for :class:`~loomctx.bus.redis.RedisEventBus`.

The loop, per consumer: own pending entries first (``XREADGROUP … 0``: what this consumer name
was given and never acknowledged), then new entries (``XREADGROUP … >`` with ``BLOCK``), and
every ``claim_timeout / 2`` the entries other consumers left pending too long. Each entry is
checked against the group's window of acknowledged ids, handed to the handler (retried up to
``max_attempts``), then committed: window entry + ``XACK`` (+ dead letter) in one ``MULTI``.
A connection error anywhere restarts the loop from the consumer's own pending entries after a
back-off; a commit that fails is retried without running the handler again.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from loomctx.bus.codec import decode, encode
from loomctx.bus.inprocess import BusOptions
from loomctx.bus.protocol import DeadLetter, Envelope, Handler
from loomctx.errors import ConfigError, MissingDependencyError
from loomctx.events import Event
from loomctx.retry import RECONNECT, exact

try:
    from redis.exceptions import BusyLoadingError, ResponseError
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError
except ImportError as exc:  # pragma: no cover - the extra is installed in tests
    raise MissingDependencyError("RedisEventBus", "redis", "redis") from exc

log = logging.getLogger("loomctx.bus.redis")

TRANSIENT = (RedisConnectionError, RedisTimeoutError, BusyLoadingError, ConnectionError, OSError)
"""Errors after which the server may answer again: retried, never fatal."""

Entry = tuple[Any, dict[bytes, bytes], int]
"""A stream entry id, its fields (empty when MAXLEN trimmed it) and the delivery attempt."""


@dataclass
class Link:
    """What a reader needs of its bus: the client, the keys, the options and the counters."""

    client: Any
    stream: str
    dead_stream: str
    seen_prefix: str
    options: BusOptions
    redis_options: Any
    """The bus's :class:`~loomctx.bus.redis.RedisOptions`."""
    stats: dict[str, int]
    where: str
    """The server's URL without its password, for messages."""
    create_group: Callable[[str, str], Awaitable[None]]

    def seen_key(self, group: str) -> str:
        return f"{self.seen_prefix}{group}"


@dataclass
class Consumer:
    """One ``subscribe``: a named Redis consumer of a group and its handler."""

    group: str
    name: str
    kinds: frozenset[str] | None
    handler: Handler
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the first read of its own pending entries is done (it is reading)."""
    task: asyncio.Task[None] | None = None
    stopped: bool = False
    """Set before the task is cancelled: redis-py may turn a cancellation inside a read into a
    connection error, which the loop would otherwise ride out forever."""


async def run_consumer(bus: Link, c: Consumer) -> None:
    """Read, handle and acknowledge until cancelled; ride out connection errors."""
    opts = bus.redis_options
    own = True
    next_claim = time.monotonic() + opts.claim_timeout / 2
    wait, failures = exact(RECONNECT.base, opts.reconnect_max_delay), 0
    while not c.stopped:
        try:
            if own:
                batch = [(eid, f, 2) for eid, f in await _read(bus, c, "0", None)]
                if not batch:
                    own = False
                    c.ready.set()
                    continue
            elif time.monotonic() >= next_claim:
                next_claim = time.monotonic() + opts.claim_timeout / 2
                batch = await _claim(bus, c)
            else:
                batch = [(eid, f, 1) for eid, f in
                         await _read(bus, c, ">", int(opts.block * 1000))]
            await _process(bus, c, batch)
            failures = 0
        except asyncio.CancelledError:
            raise
        except TRANSIENT as exc:
            if c.stopped:
                return
            bus.stats["reconnects"] += 1
            delay = wait.delay(failures)
            log.warning("group %r consumer %r lost %s (%r); retrying in %.2f s", c.group,
                        c.name, bus.where, exc, delay)
            await asyncio.sleep(delay)
            failures += 1
            own = True
        except ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            # The server lost the stream (a restart without persistence): start it again.
            log.warning("group %r vanished from %s; recreating it", c.group, bus.where)
            await bus.create_group(c.group, "0")
            own = True


async def _read(bus: Link, c: Consumer, start: str, block: int | None
                ) -> list[tuple[Any, dict[bytes, bytes]]]:
    got = await bus.client.xreadgroup(c.group, c.name, {bus.stream: start},
                                       count=bus.redis_options.batch, block=block)
    return list(got[0][1]) if got else []


async def _claim(bus: Link, c: Consumer) -> list[Entry]:
    """Take over entries idle past ``claim_timeout`` (a dead consumer's), with their attempt."""
    idle = int(bus.redis_options.claim_timeout * 1000)
    rows = await bus.client.xpending_range(bus.stream, c.group, min="-", max="+",
                                            count=bus.redis_options.batch, idle=idle)
    if not rows:
        return []
    delivered = {_text(r["message_id"]): int(r["times_delivered"]) for r in rows}
    got = await bus.client.xclaim(bus.stream, c.group, c.name, min_idle_time=idle,
                                   message_ids=[r["message_id"] for r in rows], justid=True)
    if not got:
        return []
    pipe = bus.client.pipeline(transaction=False)
    for eid in got:
        pipe.xrange(bus.stream, eid, eid)
    bodies = await pipe.execute()
    bus.stats["claimed"] += len(got)
    log.info("group %r consumer %r claimed %d entries left pending", c.group, c.name, len(got))
    return [(eid, body[0][1] if body else {}, delivered.get(_text(eid), 1) + 1)
            for eid, body in zip(got, bodies, strict=True)]


async def _process(bus: Link, c: Consumer, batch: Sequence[Entry]) -> None:
    ready: list[tuple[Any, str, Event, int]] = []
    for eid, fields, attempt in batch:
        if not fields:
            bus.stats["trimmed"] += 1
            log.warning("group %r lost entry %s: trimmed by MAXLEN before it was acknowledged; "
                        "raise maxlen above the backlog", c.group, _text(eid))
            await _commit(bus, c, eid, None)
            continue
        try:
            event_id, event = decode(json.loads(fields.get(b"e", b"")))
        except (ConfigError, ValueError) as exc:
            log.error("group %r parks unreadable entry %s: %s", c.group, _text(eid), exc)
            raw = {"raw": fields.get(b"e", repr(fields)), "error": str(exc), "group": c.group,
                   "consumer": c.name, "entry": _text(eid)}
            await _commit(bus, c, eid, None, dead=raw)
            continue
        ready.append((eid, event_id, event, attempt))
    if not ready:
        return
    seen = await bus.client.zmscore(bus.seen_key(c.group), [r[1] for r in ready])
    done: set[str] = set()
    for (eid, event_id, event, attempt), score in zip(ready, seen, strict=True):
        if score is not None or event_id in done:
            bus.stats["duplicates"] += 1
            await _commit(bus, c, eid, None)
        elif c.kinds is not None and event.kind not in c.kinds:
            await _commit(bus, c, eid, None)
        else:
            await _handle(bus, c, eid, event_id, event, attempt)
            done.add(event_id)


async def _handle(bus: Link, c: Consumer, eid: Any, event_id: str, event: Event,
                  attempt: int) -> None:
    max_attempts = bus.options.max_attempts
    if attempt > max_attempts:  # claimed back after too many deliveries without an ack
        env = Envelope(id=event_id, event=event, group=c.group, consumer=c.name,
                       attempt=attempt - 1)
        await _dead(bus, c, eid, DeadLetter(envelope=env, error=(
            f"delivered {attempt - 1} times without an acknowledgement")))
        return
    retry = 0
    while True:
        env = Envelope(id=event_id, event=event, group=c.group, consumer=c.name, attempt=attempt)
        try:
            result = c.handler(env)
            if inspect.isawaitable(result):
                await result
        except Exception as exc:
            if attempt >= max_attempts:
                await _dead(bus, c, eid, DeadLetter(envelope=env, error=repr(exc)))
                return
            await asyncio.sleep(exact(bus.options.retry_delay).delay(retry))
            retry += 1
            attempt += 1
            continue
        bus.stats["handled"] += 1
        await _commit(bus, c, eid, event_id)
        return


async def _dead(bus: Link, c: Consumer, eid: Any, dead: DeadLetter) -> None:
    env = dead.envelope
    log.warning("event %s (%s) dead-lettered for group %r after %d attempts: %s", env.id,
                env.event.kind, c.group, env.attempt, dead.error)
    bus.stats["dead_lettered"] += 1
    fields = {"e": json.dumps(encode(env.event, event_id=env.id)), "group": c.group,
              "consumer": c.name, "attempt": str(env.attempt), "error": dead.error,
              "entry": _text(eid)}
    await _commit(bus, c, eid, env.id, dead=fields)


async def _commit(bus: Link, c: Consumer, eid: Any, event_id: str | None,
                  dead: dict[str, Any] | None = None) -> None:
    """Acknowledge ``eid`` with its outcome in one transaction; retried through an outage."""
    key = bus.seen_key(c.group)
    wait, failures = exact(RECONNECT.base, bus.redis_options.reconnect_max_delay), 0
    while True:
        try:
            pipe = bus.client.pipeline(transaction=True)
            if event_id is not None:
                pipe.zadd(key, {event_id: time.time()})
                pipe.zremrangebyrank(key, 0, -(bus.options.dedup_window + 1))
            if dead is not None:
                pipe.xadd(bus.dead_stream, dead)
            pipe.xack(bus.stream, c.group, eid)
            await pipe.execute()
            return
        except TRANSIENT as exc:
            if c.stopped:  # closing: the entry stays pending and is redelivered later
                raise asyncio.CancelledError from exc
            bus.stats["reconnects"] += 1
            log.warning("group %r cannot acknowledge %s yet (%r); retrying", c.group,
                        _text(eid), exc)
            await asyncio.sleep(wait.delay(failures))
            failures += 1


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


__all__ = ["TRANSIENT", "Consumer", "Link", "ResponseError", "run_consumer"]
