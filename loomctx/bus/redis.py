"""``RedisEventBus``: the :class:`~loomctx.bus.protocol.EventBus` across processes (Redis Streams).

Keys (``P`` is the stream prefix): ``P:events`` the stream every event is appended to (``XADD``
with an approximate ``MAXLEN``), ``P:dead`` the dead letters, ``P:seen:<group>`` a sorted set of
the event ids each group acknowledged (the de-duplication window, newest ``dedup_window`` kept).

Every ``subscribe`` is one Redis consumer of its group with one reader task: it first re-reads
its own pending entries (delivered to this consumer name before a crash), then blocks on
``XREADGROUP >``; every ``claim_timeout / 2`` it takes over entries another consumer of the group
left pending longer than ``claim_timeout`` (a dead process), found with ``XPENDING IDLE`` and
taken with ``XCLAIM JUSTID``. (Redis 6.2's ``XAUTOCLAIM`` returns entries trimmed by MAXLEN
without their ids, so they could not be acknowledged; with ``XPENDING`` they can.) An id is
checked against the group's window before the handler runs; the window entry and the ``XACK``
(and the dead letter, for an event that failed ``max_attempts`` times) are written in one
``MULTI``, so an event is acknowledged exactly when its outcome is recorded.

After a connection error a reader waits (backing off up to ``reconnect_max_delay``) and goes on
from its own pending entries: what it had handled but not acknowledged is redelivered and
skipped or handled again (at least once; handlers are idempotent by id). ``publish`` retries a
failed ``XADD`` until ``publish_timeout``, then raises :class:`~loomctx.errors.BusError`; a retry
may append the same event twice, which every group handles once.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from loomctx.bus._emitter import Emitter
from loomctx.bus._reader import TRANSIENT, Consumer, Link, ResponseError, run_consumer
from loomctx.bus.codec import decode, encode
from loomctx.bus.inprocess import BusOptions
from loomctx.bus.protocol import DeadLetter, Envelope, Handler
from loomctx.errors import BusError, ConfigError, MissingDependencyError
from loomctx.events import Event
from loomctx.retry import RECONNECT, exact

try:
    import redis as _redis_sync
    import redis.asyncio as _redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry
except ImportError as exc:  # pragma: no cover - the extra is installed in tests
    raise MissingDependencyError("RedisEventBus", "redis", "redis") from exc

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class RedisOptions:
    """How the Redis backend reads, claims back and rides out an outage."""

    block: float = 1.0
    """Seconds one ``XREADGROUP`` waits for new entries."""
    batch: int = 10
    """Entries one read takes; smaller shares a group's events more evenly between consumers."""
    claim_timeout: float = 30.0
    """Seconds an entry may stay unacknowledged before another consumer takes it over; must
    exceed the slowest handler (a live consumer's entry is taken over too)."""
    publish_timeout: float = 10.0
    """Seconds ``publish`` (and a queued ``emit``) keeps retrying before it gives up."""
    reconnect_max_delay: float = 2.0
    """The longest wait between two reconnection attempts of a reader."""

    def __post_init__(self) -> None:
        for name in ("block", "claim_timeout", "publish_timeout", "reconnect_max_delay"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name}={getattr(self, name)!r}: give a positive number "
                                  "of seconds")
        if self.batch < 1:
            raise ConfigError(f"batch={self.batch!r}: give at least 1")


def _redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


class RedisEventBus:
    """Delivers events to consumer groups through a Redis stream (see the ``EventBus``
    contract); also an :class:`~loomctx.events.EventSink` (``emit`` queues to a background
    publisher, see :meth:`flush`)."""

    def __init__(self, url: str, *, options: BusOptions | None = None,
                 stream_prefix: str = "loomctx", maxlen: int | None = 100_000,
                 redis_options: RedisOptions | None = None) -> None:
        if not isinstance(url, str) or urlsplit(url).scheme not in ("redis", "rediss", "unix"):
            raise ConfigError(f"RedisEventBus needs a redis://, rediss:// or unix:// URL, "
                              f"got {url!r}")
        if not isinstance(stream_prefix, str) or not stream_prefix:
            raise ConfigError(f"stream_prefix must be a non-empty str, got {stream_prefix!r}")
        if maxlen is not None and (not isinstance(maxlen, int) or maxlen < 1):
            raise ConfigError(f"maxlen={maxlen!r}: give at least 1, or None for no bound")
        self.url = url
        self.options = options or BusOptions()
        self.redis_options = redis_options or RedisOptions()
        self._wait = exact(RECONNECT.base, self.redis_options.reconnect_max_delay)
        """How long to wait before the next try of a command while Redis is away."""
        self.maxlen = maxlen
        """Approximate bound of the stream's length (None: unbounded). Entries no group has
        acknowledged are trimmed too past it, so keep it above the largest backlog: a trimmed
        pending entry is acknowledged, logged and counted in ``stats["trimmed"]``."""
        self.stream = f"{stream_prefix}:events"
        self.dead_stream = f"{stream_prefix}:dead"
        self._seen_prefix = f"{stream_prefix}:seen:"
        self._where = _redact(url)
        self.stats: dict[str, int] = dict.fromkeys(
            ("published", "handled", "duplicates", "dead_lettered", "trimmed", "claimed",
             "reconnects"), 0)
        """Counters of this instance (handled counts handler successes)."""
        kw: dict[str, Any] = {"retry": Retry(NoBackoff(), 0), "socket_connect_timeout": 2.0,
                              "socket_timeout": self.redis_options.block + 5.0}
        # Any: redis-py's reply types are unions of every RESP shape; the calls here are few.
        self._client: Any = _redis.Redis.from_url(url, **kw)
        self._sync: Any = _redis_sync.Redis.from_url(url, **kw)
        self._emitter = Emitter(self._send_sync, timeout=self.redis_options.publish_timeout,
                                retry_errors=TRANSIENT, where=self._where)
        self._link = Link(client=self._client, stream=self.stream, dead_stream=self.dead_stream,
                          seen_prefix=self._seen_prefix, options=self.options,
                          redis_options=self.redis_options, stats=self.stats, where=self._where,
                          create_group=self._create_group)
        self._consumers: list[Consumer] = []
        self._closed = False

    # -- publishing ------------------------------------------------------------------------
    def emit(self, event: Event) -> None:
        """The :class:`~loomctx.events.EventSink` hook: encode, queue and return at once.

        A daemon thread sends the queue; ``await flush()`` or ``aclose()`` before the process
        exits, or queued events die with it (and an unsent one raises there)."""
        self._check_open(event)
        self._emitter.put(json.dumps(encode(event)))

    @property
    def unsent(self) -> list[dict[str, Any]]:
        """Emitted events the background publisher gave up on (encoded; publish them again)."""
        return self._emitter.unsent

    async def flush(self, timeout: float | None = None) -> None:
        """Wait until every emitted event is in the stream; raise :class:`BusError` when some
        could not be sent since the last flush."""
        await asyncio.to_thread(self._emitter.flush, timeout)

    async def publish(self, event: Event, *, event_id: str | None = None) -> str:
        self._check_open(event)
        payload = encode(event, event_id=event_id)
        data = json.dumps(payload)
        deadline = time.monotonic() + self.redis_options.publish_timeout
        failures = 0
        while True:
            try:
                await self._client.xadd(self.stream, {"e": data}, **self._trim())
                self.stats["published"] += 1
                return str(payload["id"])
            except TRANSIENT as exc:
                delay = self._wait.delay(failures)
                if time.monotonic() + delay > deadline:
                    raise BusError(
                        f"event {event.kind!r} ({payload['id']}) not published: {self._where} "
                        f"unreachable for {self.redis_options.publish_timeout} s ({exc!r}); "
                        "publish again with the same event_id once Redis is back") from exc
                await asyncio.sleep(delay)
                failures += 1
            except ResponseError as exc:
                raise BusError(f"event {event.kind!r} ({payload['id']}) refused by "
                               f"{self._where}: {exc}") from exc

    def _send_sync(self, data: Sequence[str]) -> list[BaseException | None]:
        """The emitter's :data:`~loomctx.bus._emitter.Send`: one pipeline of XADDs."""
        pipe = self._sync.pipeline(transaction=False)
        for payload in data:
            pipe.xadd(self.stream, {"e": payload}, **self._trim())
        outcomes = [r if isinstance(r, BaseException) else None
                    for r in pipe.execute(raise_on_error=False)]
        self.stats["published"] += sum(r is None for r in outcomes)
        return outcomes

    def _trim(self) -> dict[str, Any]:
        return {} if self.maxlen is None else {"maxlen": self.maxlen, "approximate": True}

    def _check_open(self, event: Event) -> None:
        if self._closed:
            raise ConfigError(f"event {getattr(event, 'kind', event)!r} published to a closed "
                              "event bus: publish before aclose(), or create a new bus")

    # -- subscribing -----------------------------------------------------------------------
    async def subscribe(self, kinds: str | Iterable[str] | None, handler: Handler, *,
                        group: str, consumer: str | None = None) -> None:
        if self._closed:
            raise ConfigError("subscribe on a closed event bus: create a new bus")
        if not isinstance(group, str) or not group:
            raise ConfigError(f"group must be a non-empty str, got {group!r}")
        wanted = None if kinds is None else frozenset([kinds] if isinstance(kinds, str)
                                                     else kinds)
        name = consumer or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        for c in self._consumers:
            if c.group == group and c.kinds != wanted:
                raise ConfigError(f"group {group!r} already reads kinds {sorted(c.kinds or [])!r}"
                                  f" here, not {sorted(wanted or [])!r}: in Redis a group's "
                                  "consumers share one filter; use another group")
            if c.group == group and c.name == name:
                raise ConfigError(f"consumer {name!r} already reads group {group!r}: give "
                                  "another consumer name")
        await self._retrying(lambda: self._create_group(group, "$"), f"subscribe {group!r}")
        c = Consumer(group=group, name=name, kinds=wanted, handler=handler)
        c.task = asyncio.get_running_loop().create_task(run_consumer(self._link, c),
                                                        name=f"loomctx-bus-{group}-{name}")
        self._consumers.append(c)
        # Return once the consumer reads (or after publish_timeout while Redis is away: it
        # keeps trying on its own); the group exists already, so nothing published is missed.
        reading = asyncio.ensure_future(c.ready.wait())
        await asyncio.wait({c.task, reading}, timeout=self.redis_options.publish_timeout,
                           return_when=asyncio.FIRST_COMPLETED)
        reading.cancel()

    async def _create_group(self, group: str, start: str) -> None:
        try:
            await self._client.xgroup_create(self.stream, group, start, mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    async def _retrying(self, call: Any, what: str) -> Any:
        deadline = time.monotonic() + self.redis_options.publish_timeout
        failures = 0
        while True:
            try:
                return await call()
            except TRANSIENT as exc:
                delay = self._wait.delay(failures)
                if time.monotonic() + delay > deadline:
                    raise BusError(f"{what}: {self._where} unreachable for "
                                   f"{self.redis_options.publish_timeout} s ({exc!r})") from exc
                await asyncio.sleep(delay)
                failures += 1

    async def forget_group(self, group: str) -> None:
        """Stop this bus's consumers of ``group`` and remove the group and its
        de-duplication window from Redis: for a group that is one process's own (a reader
        that goes for good), which would otherwise stay in Redis after it."""
        mine = [c for c in self._consumers if c.group == group]
        for c in mine:
            c.stopped = True
            if c.task is not None:
                c.task.cancel()
        await asyncio.gather(*(c.task for c in mine if c.task is not None),
                             return_exceptions=True)
        self._consumers = [c for c in self._consumers if c.group != group]
        await self._retrying(lambda: self._client.xgroup_destroy(self.stream, group),
                             f"forget group {group!r}")
        await self._retrying(lambda: self._client.delete(self.seen_key(group)),
                             f"forget group {group!r}")

    # -- state -----------------------------------------------------------------------------
    async def pending(self, group: str) -> int:
        """Events in the stream the group has not acknowledged yet (read or not)."""
        async def count() -> int:
            for info in await self._client.xinfo_groups(self.stream):
                if _text(info["name"]) == group:
                    last = _text(info["last-delivered-id"])
                    unread = await self._client.xrange(self.stream, f"({last}", "+")
                    return int(info["pending"]) + len(unread)
            return 0
        return int(await self._retrying(count, f"pending of {group!r}"))

    async def read_dead_letters(self, group: str | None = None) -> list[DeadLetter]:
        """The dead letters in the stream (of ``group`` only when given), oldest first.

        Entries whose event could not be decoded carry a ``raw`` field instead and are left out
        here (they were logged when parked); read them with ``XRANGE <prefix>:dead``.
        """
        rows = await self._retrying(lambda: self._client.xrange(self.dead_stream),
                                    "read dead letters")
        out = []
        for _, f in rows:
            fields = {_text(k): _text(v) for k, v in f.items()}
            if "e" not in fields or (group is not None and fields["group"] != group):
                continue
            event_id, event = decode(json.loads(fields["e"]))
            env = Envelope(id=event_id, event=event, group=fields["group"],
                           consumer=fields["consumer"], attempt=int(fields["attempt"]))
            out.append(DeadLetter(envelope=env, error=fields["error"]))
        return out

    def seen_key(self, group: str) -> str:
        """The sorted set of event ids ``group`` acknowledged (its de-duplication window)."""
        return self._link.seen_key(group)

    # -- closing ---------------------------------------------------------------------------
    async def drain(self, timeout: float | None = 30.0) -> None:
        """Wait until every group read here acknowledged everything published so far
        (emitted events included); :class:`BusError` after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        await self.flush(timeout)
        for group in dict.fromkeys(c.group for c in self._consumers):
            while await self.pending(group):
                if deadline is not None and time.monotonic() > deadline:
                    raise BusError(f"group {group!r} still has unacknowledged events after "
                                   f"{timeout} s: is a handler stuck, or its consumers dead?")
                await asyncio.sleep(0.005)

    async def aclose(self, *, drain: bool = True, timeout: float | None = 30.0) -> None:
        """Stop delivery (after handling what was published, unless ``drain=False``) and close
        the connections; raises :class:`BusError` when emitted events could not be sent."""
        if self._closed:
            return
        problem: BusError | None = None
        try:
            if drain:
                await self.drain(timeout)
        except BusError as exc:
            problem = exc
        self._closed = True
        for c in self._consumers:
            c.stopped = True
        tasks = [c.task for c in self._consumers if c.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.to_thread(self._emitter.close)
        if problem is None:
            try:
                self._emitter.flush(0)
            except BusError as exc:
                problem = exc
        await self._client.aclose()
        self._sync.close()
        if problem is not None:
            raise problem


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


__all__ = ["RedisEventBus", "RedisOptions"]
