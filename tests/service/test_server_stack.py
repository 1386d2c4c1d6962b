"""The HTTP stack ``loomctx serve`` runs on: uvicorn's C parts when they are installed.

httptools (the HTTP parser) and uvloop (the event loop) come with the ``service`` extra; uvicorn
picks them by itself, and a setting that pinned h11 or asyncio's loop would silently give back
about a tenth of the proxy's CPU per request (``benchmarks/bench_proxy.py --only throughput``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest

from loomctx.service import RunningServer
from loomctx.testing.windowed import WindowedFakeServer


def test_the_service_parses_http_with_httptools(
        upstream: WindowedFakeServer, start: Callable[..., RunningServer]) -> None:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol  # the extra brings it

    server = start(upstream)
    assert server._server.config.http_protocol_class is HttpToolsProtocol


@pytest.mark.skipif(sys.platform == "win32", reason="uvloop has no Windows build")
def test_the_service_runs_on_uvloop(upstream: WindowedFakeServer,
                                    start: Callable[..., RunningServer]) -> None:
    import uvloop  # the service extra brings it wherever it builds

    server = start(upstream)
    assert server._server.config.get_loop_factory() is uvloop.new_event_loop
