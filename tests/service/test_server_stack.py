"""The HTTP stack ``loomctx serve`` runs on: uvicorn's C parts when they are installed.

httptools (the HTTP parser) and uvloop (the event loop) come with the ``service`` extra; uvicorn
picks them by itself, and a setting that pinned h11 or asyncio's loop would silently give back
about a tenth of the proxy's CPU per request (``benchmarks/bench_proxy.py --only throughput``).
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Iterator

import httpx
import pytest

from loomctx.service import RunningServer, ServiceOptions, serve_in_thread
from loomctx.service.heap import YOUNG_THRESHOLD
from loomctx.testing import HashingEmbedder
from loomctx.testing.windowed import WindowedFakeServer


def test_the_service_parses_http_with_httptools(
        upstream: WindowedFakeServer, start: Callable[..., RunningServer]) -> None:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol  # the extra brings it

    from loomctx.service.guard import GuardedProtocol

    server = start(upstream)
    parser = server._server.config.http_protocol_class
    assert issubclass(parser, GuardedProtocol) and issubclass(parser, HttpToolsProtocol)


@pytest.mark.skipif(sys.platform == "win32", reason="uvloop has no Windows build")
def test_the_service_runs_on_uvloop(upstream: WindowedFakeServer,
                                    start: Callable[..., RunningServer]) -> None:
    import uvloop  # the service extra brings it wherever it builds

    server = start(upstream)
    assert server._server.config.get_loop_factory() is uvloop.new_event_loop


@pytest.fixture
def collector() -> Iterator[tuple[int, int, int]]:
    """The collector's thresholds before the test, restored (and nothing frozen) after it."""
    before = gc.get_threshold()
    yield before
    gc.set_threshold(*before)
    gc.unfreeze()


def test_a_process_of_its_own_collects_garbage_for_a_server(
        upstream: WindowedFakeServer, collector: tuple[int, int, int]) -> None:
    with serve_in_thread(ServiceOptions(upstream=upstream.url + "/v1",
                                        embedder=HashingEmbedder()), own_process=True) as server:
        assert httpx.get(server.url + "/health").status_code == 200
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *collector[1:])
        assert gc.get_freeze_count() > 0  # what startup made is out of the collector's walks


def test_an_embedded_service_leaves_the_collector_alone(
        upstream: WindowedFakeServer, start: Callable[..., RunningServer],
        collector: tuple[int, int, int]) -> None:
    frozen = gc.get_freeze_count()
    server = start(upstream)
    assert httpx.get(server.url + "/health").status_code == 200
    assert gc.get_threshold() == collector
    assert gc.get_freeze_count() == frozen
