"""The report pages as ``loomctx serve`` serves them, opened in the browser over real HTTP.

A client talks to the proxy (which forwards to a fake upstream on loopback); the build id the
proxy returns leads to the build's page and the session's page, which the browser loads with the
tenant's key. Another tenant's key gets a 404 for the same pages.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from conftest import ARTIFACTS

from loomctx.service import ServiceOptions
from loomctx.service.run import RunningServer, serve_in_thread
from loomctx.testing import HashingEmbedder
from loomctx.testing.windowed import WindowedFakeServer

KEYS = {"key-aaaaaaaa": "tenant-a", "key-bbbbbbbb": "tenant-b"}


@pytest.fixture
def served() -> Iterator[tuple[RunningServer, str, str]]:
    """The service with two tenants; one conversation of tenant A through the proxy."""
    with WindowedFakeServer(window=4000, default="The parcel is in Leipzig.") as upstream:
        server = serve_in_thread(ServiceOptions(upstream=upstream.url + "/v1", keys=KEYS,
                                                embedder=HashingEmbedder()))
        try:
            chat = [{"role": "system", "content": "You track parcels."},
                    {"role": "user", "content": "Where is parcel PX-1138?"}]
            headers = {"Authorization": "Bearer key-aaaaaaaa"}
            first = httpx.post(f"{server.url}/v1/chat/completions", headers=headers,
                               json={"model": "gpt-4o", "messages": chat, "max_tokens": 200})
            assert first.status_code == 200, first.text
            chat += [first.json()["choices"][0]["message"],
                     {"role": "user", "content": "And when does it arrive?"}]
            second = httpx.post(f"{server.url}/v1/chat/completions", headers=headers,
                                json={"model": "gpt-4o", "messages": chat, "max_tokens": 200})
            assert second.status_code == 200, second.text
            yield server, second.headers["x-loomctx-build"], second.headers["x-loomctx-session"]
        finally:
            server.close()


def _open(browser_context: Any, url: str, key: str, origin: str) -> tuple[Any, list[str]]:
    page = browser_context.new_page()
    page.set_extra_http_headers({"Authorization": f"Bearer {key}"})
    outside: list[str] = []

    def guard(route: Any) -> None:
        if route.request.url.startswith(origin):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", guard)
    response = page.goto(url)
    assert response is not None
    return page, outside if response.ok else [f"status {response.status}"]


def test_served_build_and_session_pages(browser_context: Any,
                                        served: tuple[RunningServer, str, str]) -> None:
    server, build_id, session_id = served
    page, outside = _open(browser_context, f"{server.url}/builds/{build_id}", "key-aaaaaaaa",
                          server.url)
    assert outside == []
    text = page.inner_text("body")
    assert "PX-1138" in text and "when does it arrive" in text
    assert page.locator("table tbody tr").count() >= 3  # system, history, input rows
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "served-build.png"), full_page=True)
    page.close()

    page, outside = _open(browser_context, f"{server.url}/sessions/{session_id}", "key-aaaaaaaa",
                          server.url)
    assert outside == []
    assert page.locator(f"a[href='/builds/{build_id}']").count() == 1
    page.screenshot(path=str(ARTIFACTS / "served-session.png"), full_page=True)
    page.close()


def test_another_tenant_gets_404_for_the_pages(served: tuple[RunningServer, str, str]) -> None:
    server, build_id, session_id = served
    for path in (f"/builds/{build_id}", f"/sessions/{session_id}"):
        other = httpx.get(server.url + path, headers={"Authorization": "Bearer key-bbbbbbbb"})
        assert other.status_code == 404, (path, other.status_code)
        known = path.rsplit("/", 1)[1]
        unknown = httpx.get(server.url + path.replace(known, "nope"),
                            headers={"Authorization": "Bearer key-aaaaaaaa"})
        # The same answer as for an id that does not exist: nothing tells that it does.
        assert other.text.replace(known, "nope") == unknown.text
