"""``serve --workers N``: N processes on one port, each new connection given to the worker
that holds the fewest.

The parent listens on the port, accepts each connection and passes it (``SCM_RIGHTS`` over a
``socketpair`` per worker) to the worker with the fewest open connections; a worker says over
the same pair when one of its connections closes. Why not let the kernel choose:

- on one shared listening socket (uvicorn's own workers) the worker a new connection wakes
  accepts every connection waiting: sixteen clients that connected at once all landed on one
  worker of two, which served them alone while the other idled (3.96 s of CPU against 0.02 s
  over 400 requests);
- with a socket each and ``SO_REUSEPORT`` the kernel spreads connections by a hash of their
  addresses: sixteen kept-alive clients were split 8/8, 10/6, 12/4 or 13/3 from run to run, and
  the worker with fewer idled (busy 0.18-0.5 of the time) while the other's clients waited.

Counting connections, sixteen are split 8/8 every time. The parent starts the workers, starts a
worker again when one dies (a worker that could not start stops them all: the next would fail
the same way), and on SIGINT or SIGTERM stops accepting and stops them (SIGTERM: each finishes
what it serves, as ``loomctx serve`` does alone). A worker whose parent is gone (killed) stops
too: its pair reads as closed. Connections are accepted once every worker serves (or after
:data:`START_WAIT`): sixteen clients that connect as soon as the port answers are not all given
to the worker that started first.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import multiprocessing
import os
import selectors
import signal
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import Any

from loomctx.errors import ConfigError

log = logging.getLogger("loomctx.service")

STARTUP_FAILURE = 3
"""The exit code of a worker that could not start (uvicorn's)."""
STOP_WAIT = 60.0
"""Seconds the workers get to finish after SIGTERM before they are killed."""
START_WAIT = 60.0
"""Seconds the parent waits for every worker to serve before it accepts connections anyway."""
BACKLOG = 2048
"""Connections the port holds before the parent accepts them (uvicorn's default)."""
_OPENED, _CLOSED, _READY = b"+", b"-", b"!"
"""What the parent sends with a connection; what a worker sends when one closes, and once
when it serves."""


def handoff_supported() -> bool:
    """Whether this system can pass connections between processes as the parent does (Unix:
    ``socket.send_fds`` and ``SOCK_SEQPACKET`` pairs)."""
    return hasattr(socket, "send_fds") and hasattr(socket, "AF_UNIX") \
        and hasattr(socket, "SOCK_SEQPACKET")


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port``."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(BACKLOG)
    except BaseException:
        sock.close()
        raise
    return sock


def _counted(protocol: type[asyncio.Protocol], closed: Callable[[], None],
             ) -> Callable[..., asyncio.Protocol]:
    """``protocol``, calling ``closed`` once each connection is lost."""

    def connection_lost(self: asyncio.Protocol, exc: Exception | None) -> None:
        try:
            protocol.connection_lost(self, exc)
        finally:
            closed()

    return type(protocol.__name__, (protocol,), {"connection_lost": connection_lost})


def _server(config: Any, channel: socket.socket) -> Any:
    """A uvicorn server that serves the connections the parent passes over ``channel``."""
    import uvicorn

    opening: set[asyncio.Task[None]] = set()

    class Handed(uvicorn.Server):  # type: ignore[misc]
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=[])  # listens on nothing: the parent does
            loop = asyncio.get_running_loop()
            protocol = _counted(self.config.http_protocol_class, self._closed)
            factory = functools.partial(protocol, config=self.config,
                                        server_state=self.server_state,
                                        app_state=self.lifespan.state)
            channel.setblocking(False)
            loop.add_reader(channel.fileno(), self._take, loop, factory)
            with contextlib.suppress(OSError):
                channel.send(_READY)

        def _take(self, loop: asyncio.AbstractEventLoop, factory: Any) -> None:
            while True:
                try:
                    data, fds, _, _ = socket.recv_fds(channel, 16, 4)
                except (BlockingIOError, InterruptedError):
                    return
                except OSError:
                    data, fds = b"", []
                if not data and not fds:  # the parent is gone: stop as on SIGTERM
                    loop.remove_reader(channel.fileno())
                    self.should_exit = True
                    return
                for fd in fds:  # kept until done: the loop holds tasks only weakly
                    task = loop.create_task(self._open(loop, factory, socket.socket(fileno=fd)))
                    opening.add(task)
                    task.add_done_callback(opening.discard)

        async def _open(self, loop: asyncio.AbstractEventLoop, factory: Any,
                         sock: socket.socket) -> None:
            try:
                await loop.connect_accepted_socket(factory, sock)
            except OSError:  # the client left before it was served
                sock.close()
                self._closed()

        def _closed(self) -> None:
            with contextlib.suppress(OSError):  # the parent is gone, or stopping
                channel.send(_CLOSED)

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            with contextlib.suppress(OSError, ValueError):
                asyncio.get_running_loop().remove_reader(channel.fileno())
            await super().shutdown(sockets=sockets)

    return Handed(config)


def _worker(app: str, channel: socket.socket, settings: dict[str, Any]) -> None:
    """One worker process: the app of the uvicorn factory ``app``, serving the connections
    passed over ``channel``."""
    import uvicorn

    server = _server(uvicorn.Config(app, factory=True, **settings), channel)
    server.run(sockets=[])
    if not server.started:
        sys.exit(STARTUP_FAILURE)


@dataclass
class _Worker:
    """A worker process as the parent sees it."""

    process: BaseProcess
    channel: socket.socket
    """The parent's end of the worker's pair."""
    open: int = 0
    """Connections passed to it and not yet closed."""
    ready: bool = False
    """It said it serves (until then, it is given connections only when no worker is)."""


class _Parent:
    """The parent's half: the workers, their pairs, and the connections each holds."""

    def __init__(self, app: str, settings: dict[str, Any]) -> None:
        self.spawn = multiprocessing.get_context("spawn")
        self.app, self.settings = app, settings
        self.selector = selectors.DefaultSelector()
        self.workers: list[_Worker] = []
        self.turn = 0  # who goes first among workers holding as few

    def start(self) -> _Worker:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            process = self.spawn.Process(target=_worker, args=(self.app, theirs, self.settings),
                                         name="loomctx-serve-worker")
            process.start()
        except BaseException:
            mine.close()
            raise
        finally:
            theirs.close()
        mine.setblocking(False)
        worker = _Worker(process, mine)
        self.selector.register(mine, selectors.EVENT_READ, worker)
        return worker

    def retire(self, worker: _Worker) -> None:
        """Stop listening to a worker that is gone (once or more)."""
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(worker.channel)
        worker.channel.close()

    def hand(self, conn: socket.socket) -> None:
        """Pass ``conn`` to the worker holding the fewest connections among those that serve
        (one still starting only when none does; the next that will take it, when one's pair
        is full or closed); the parent's copy is closed."""
        with conn:
            self.turn += 1
            n = len(self.workers)
            order = sorted(range(n), key=lambda i: (not self.workers[i].ready,
                                                    self.workers[i].open, (i - self.turn) % n))
            for i in order:
                worker = self.workers[i]
                try:
                    socket.send_fds(worker.channel, [_OPENED], [conn.fileno()])
                except OSError:
                    continue
                worker.open += 1
                return
            log.warning("no worker could take a connection; closed it")

    def all_serve(self, waited: float) -> bool:
        """Whether to accept connections: every worker serves, or :data:`START_WAIT` seconds
        have passed since they were started."""
        return waited > START_WAIT or all(w.ready for w in self.workers)

    def heard(self, worker: _Worker) -> None:
        """Count the connections ``worker`` says it closed."""
        while True:
            try:
                data = worker.channel.recv(16)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data = b""
            if not data:  # the worker is gone; the loop starts another
                self.retire(worker)
                return
            worker.ready = worker.ready or _READY in data
            worker.open = max(0, worker.open - data.count(_CLOSED))


def run_workers(count: int, app: str, *, host: str, port: int, **settings: Any) -> int:
    """Serve the uvicorn factory ``app`` (``module:function``) from ``count`` processes on
    ``host:port`` until SIGINT or SIGTERM; ``settings`` go to each worker's
    ``uvicorn.Config``. The exit code: 0, or :data:`STARTUP_FAILURE`."""
    try:
        listener = listening_socket(host, port)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}: pick another "
                          "--host or --port") from exc
    listener.setblocking(False)
    parent = _Parent(app, settings)
    stopping: list[int] = []

    def stop(signum: int, frame: FrameType | None) -> None:
        stopping.append(signum)

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    code = 0
    try:
        parent.workers = [parent.start() for _ in range(count)]
        checked = time.monotonic()
        started, accepting = checked, False
        while not stopping:
            if not accepting and parent.all_serve(time.monotonic() - started):
                # connections wait in the backlog until every worker serves: clients that
                # connect at once would otherwise all be given to the first that started
                parent.selector.register(listener, selectors.EVENT_READ, None)
                accepting = True
            for key, _ in parent.selector.select(0.2):
                if key.data is None:
                    _accept(listener, parent)
                else:
                    parent.heard(key.data)
            if time.monotonic() - checked < 0.2:
                continue
            checked = time.monotonic()
            for i, worker in enumerate(parent.workers):
                if worker.process.is_alive() or stopping:
                    continue
                if worker.process.exitcode == STARTUP_FAILURE:
                    log.error("a worker could not start; stopping the others")
                    stopping.append(signal.SIGTERM)
                    code = STARTUP_FAILURE
                    break
                log.warning("worker %s exited (code %s); starting another", worker.process.pid,
                            worker.process.exitcode)
                parent.retire(worker)
                parent.workers[i] = parent.start()
    finally:
        with contextlib.suppress(KeyError, ValueError):
            parent.selector.unregister(listener)
        listener.close()  # new connections are refused from here on
        for worker in parent.workers:
            if worker.process.is_alive() and worker.process.pid is not None:
                os.kill(worker.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_WAIT
        for worker in parent.workers:
            worker.process.join(max(0.0, deadline - time.monotonic()))
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.channel.close()
        parent.selector.close()
        for s, handler in previous.items():
            signal.signal(s, handler)
    return code


def _accept(listener: socket.socket, parent: _Parent) -> None:
    """Accept the connections waiting and pass each on."""
    while True:
        try:
            conn, _ = listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:  # out of descriptors: the backlog waits for the next round
            log.warning("could not accept a connection: %s", exc)
            return
        parent.hand(conn)


__all__ = ["BACKLOG", "START_WAIT", "STARTUP_FAILURE", "STOP_WAIT", "handoff_supported",
           "listening_socket", "run_workers"]
