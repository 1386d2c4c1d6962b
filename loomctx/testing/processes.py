"""Waiting for a server started in a child process (``loomctx serve``, a relay) to answer.

Tests and benchmarks start the proxy with ``subprocess`` and must not send a request before it
listens, nor wait forever for a process that already died: one loop, shared.
"""

from __future__ import annotations

import subprocess
import time

import httpx

from loomctx.servers import ServerError


def wait_healthy(url: str, proc: subprocess.Popen[bytes], *, timeout: float = 60.0,
                 interval: float = 0.2) -> None:
    """Return once a GET of ``url`` gets any HTTP answer; :class:`ServerError` when ``proc``
    exits first or ``timeout`` seconds pass (the caller decides what to show of its output)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            if proc.poll() is not None:
                raise ServerError(f"{url} never answered: the process exited with "
                                  f"{proc.returncode}") from None
            if time.monotonic() > deadline:
                raise ServerError(f"{url} did not answer within {timeout:g} s") from None
            time.sleep(interval)


__all__ = ["wait_healthy"]
