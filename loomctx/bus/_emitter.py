"""The background publisher behind ``RedisEventBus.emit``: sync, quick, any thread, never silent.

A session calls ``emit`` synchronously from whatever thread changed it (see
:class:`~loomctx.events.EventSink`), so ``emit`` cannot wait for a server. It encodes the event
(a bad event fails right there, in the caller) and queues it; one daemon thread sends the queue
in order with its own synchronous Redis client, retrying through an outage until the publish
timeout. What is queued when the thread wakes goes in one round trip (up to :data:`BATCH`
events): a proxied turn emits several events at once, and a round trip each cost the sender a
wake-up and the server a read each. An event it still cannot send is logged, counted and kept
in :attr:`Emitter.unsent`, and the next :meth:`Emitter.flush` (which ``RedisEventBus.flush``
and ``aclose`` call) raises :class:`~loomctx.errors.BusError` about it.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from loomctx.errors import BusError
from loomctx.retry import RECONNECT

log = logging.getLogger("loomctx.bus.redis")

Send = Callable[[Sequence[str]], Sequence[BaseException | None]]
"""Appends encoded events to the stream in order, in one round trip (an XADD each); for each,
None or the server's refusal of it; raises on a connection failure (then some may be in)."""

BATCH = 64
"""The most events sent in one round trip."""


class Emitter:
    """One sender thread, started on the first event, stopped by :meth:`close`."""

    def __init__(self, send: Send, *, timeout: float, retry_errors: tuple[type[BaseException], ...],
                 where: str) -> None:
        self._send = send
        self._timeout = timeout
        self._retry_errors = retry_errors
        self._where = where
        self._queue: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._lock = threading.Condition()
        self._inflight = 0
        self._thread: threading.Thread | None = None
        self.failures = 0
        """Events given up on (each also logged and kept in :attr:`unsent`)."""
        self.unsent: list[dict[str, Any]] = []
        """The encoded events that could not be sent, oldest first (re-publish them)."""
        self._errors: list[str] = []

    def put(self, payload: str) -> None:
        with self._lock:
            self._inflight += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="loomctx-bus-emit",
                                                daemon=True)
                self._thread.start()
        self._queue.put(payload)

    def flush(self, timeout: float | None = None) -> None:
        """Block until every queued event is sent or given up on; raise about those given up."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while self._inflight:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise BusError(f"{self._inflight} emitted events still unsent to "
                                   f"{self._where} after {timeout} s: is the server reachable?")
                self._lock.wait(left)
            errors, self._errors = self._errors, []
        if errors:
            raise BusError(f"{len(errors)} emitted events could not be sent to {self._where} "
                           f"(first: {errors[0]}); they are kept in bus.unsent: publish them "
                           "again once the server is back")

    def close(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        while True:
            payload = self._queue.get()
            if payload is None:
                return
            batch, last = [payload], False
            while len(batch) < BATCH:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    last = True
                    break
                batch.append(more)
            try:
                self._send_with_retry(batch)
            finally:
                with self._lock:
                    self._inflight -= len(batch)
                    self._lock.notify_all()
            if last:
                return

    def _send_with_retry(self, batch: list[str]) -> None:
        """Send ``batch``, all of it again after a connection failure (an event may then be
        in the stream twice, which every group handles once)."""
        deadline = time.monotonic() + self._timeout
        failures = 0
        while True:
            try:
                outcomes = self._send(batch)
                break
            except self._retry_errors as exc:
                delay = RECONNECT.delay(failures)
                if time.monotonic() + delay <= deadline:
                    time.sleep(delay)
                    failures += 1
                    continue
                for payload in batch:
                    self._give_up(payload, exc)
                return
            except Exception as exc:  # a refusal by the server: retrying will not help
                for payload in batch:
                    self._give_up(payload, exc)
                return
        for payload, refused in zip(batch, outcomes, strict=True):
            if refused is not None:
                self._give_up(payload, refused)

    def _give_up(self, payload: str, exc: BaseException) -> None:
        event = json.loads(payload)
        message = f"event {event.get('kind')!r} {event.get('id')}: {exc!r}"
        log.error("could not emit to %s, kept in bus.unsent: %s", self._where, message)
        with self._lock:
            self.failures += 1
            self.unsent.append(event)
            self._errors.append(message)


__all__ = ["BATCH", "Emitter", "Send"]
