"""``serve --workers N``: N processes on one port, each listening on a socket of its own.

uvicorn's own workers share one listening socket, and the worker a new connection wakes
accepts every connection waiting: sixteen clients that connected at once all landed on one
worker of two, which served them alone while the other idled (3.96 s of CPU against 0.02 s
over 400 requests). Here each worker binds the port itself with ``SO_REUSEPORT`` and the
kernel spreads new connections over the workers' sockets (by a hash of each connection's
addresses), so connections that come together are served by every worker.

The parent starts the workers, starts a worker again when one dies (a worker that could not
start stops them all: the next would fail the same way), and on SIGINT or SIGTERM stops them
(SIGTERM: each finishes what it serves, as ``loomctx serve`` does alone).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import socket
import sys
import time
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import Any

log = logging.getLogger("loomctx.service")

STARTUP_FAILURE = 3
"""The exit code of a worker that could not start (uvicorn's)."""
STOP_WAIT = 60.0
"""Seconds the workers get to finish after SIGTERM before they are killed."""
BACKLOG = 2048
"""Connections each worker's socket holds before it accepts them (uvicorn's default)."""


def reuse_port_supported() -> bool:
    """Whether this system lets several sockets listen on one port (Linux, the BSDs)."""
    return hasattr(socket, "SO_REUSEPORT")


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port`` that other workers' sockets may share the port
    with."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
        sock.listen(BACKLOG)
    except BaseException:
        sock.close()
        raise
    return sock


def _worker(app: str, host: str, port: int, settings: dict[str, Any]) -> None:
    """One worker process: its own socket, the app of the uvicorn factory ``app``."""
    import uvicorn

    sock = listening_socket(host, port)
    server = uvicorn.Server(uvicorn.Config(app, factory=True, **settings))
    server.run(sockets=[sock])
    if not server.started:
        sys.exit(STARTUP_FAILURE)


def run_workers(count: int, app: str, *, host: str, port: int, **settings: Any) -> int:
    """Serve the uvicorn factory ``app`` (``module:function``) from ``count`` processes on
    ``host:port`` until SIGINT or SIGTERM; ``settings`` go to each worker's
    ``uvicorn.Config``. The exit code: 0, or :data:`STARTUP_FAILURE`."""
    spawn = multiprocessing.get_context("spawn")
    stopping: list[int] = []

    def start() -> BaseProcess:
        process = spawn.Process(target=_worker, args=(app, host, port, settings),
                                name="loomctx-serve-worker")
        process.start()
        return process

    def stop(signum: int, frame: FrameType | None) -> None:
        stopping.append(signum)

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    workers = [start() for _ in range(count)]
    code = 0
    try:
        while not stopping:
            for i, worker in enumerate(workers):
                if worker.is_alive() or stopping:
                    continue
                if worker.exitcode == STARTUP_FAILURE:
                    log.error("a worker could not start; stopping the others")
                    stopping.append(signal.SIGTERM)
                    code = STARTUP_FAILURE
                    break
                log.warning("worker %s exited (code %s); starting another", worker.pid,
                            worker.exitcode)
                workers[i] = start()
            time.sleep(0.2)
    finally:
        for worker in workers:
            if worker.is_alive() and worker.pid is not None:
                os.kill(worker.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_WAIT
        for worker in workers:
            worker.join(max(0.0, deadline - time.monotonic()))
            if worker.is_alive():
                worker.kill()
                worker.join()
        for s, handler in previous.items():
            signal.signal(s, handler)
    return code


__all__ = ["BACKLOG", "STARTUP_FAILURE", "STOP_WAIT", "listening_socket",
           "reuse_port_supported", "run_workers"]
