"""Fixtures of the service tests: a fake upstream with a window, and the service in front of it,
both on loopback over real HTTP (uvicorn in a thread)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from loomctx.service import RunningServer, ServiceOptions, serve_in_thread
from loomctx.testing import HashingEmbedder
from loomctx.testing.windowed import WindowedFakeServer


@pytest.fixture
def upstream() -> Iterator[WindowedFakeServer]:
    """A fake upstream with a 3000-token window that answers "ok" once its script runs out."""
    with WindowedFakeServer(window=3000, default="ok") as server:
        yield server


@pytest.fixture
def start() -> Iterator[Callable[..., RunningServer]]:
    """Starts services (stopped at the end of the test): ``start(upstream, **options)``."""
    running: list[RunningServer] = []

    def go(upstream: WindowedFakeServer, **options: Any) -> RunningServer:
        options.setdefault("embedder", HashingEmbedder())
        server = serve_in_thread(ServiceOptions(upstream=upstream.url + "/v1", **options))
        running.append(server)
        return server

    yield go
    for server in running:
        server.close()


@pytest.fixture
def proxy(upstream: WindowedFakeServer, start: Callable[..., RunningServer]) -> RunningServer:
    """The service in front of ``upstream``, open (no keys)."""
    return start(upstream)
