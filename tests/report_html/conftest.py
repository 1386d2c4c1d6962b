"""A real headless browser for the report pages: Debian's chromium driven by Playwright.

The browser is the system one (``/usr/bin/chromium``, the apt package ``chromium``; ``make
install`` puts it there), never one Playwright downloads. A machine without it FAILS these
tests: a page nobody opened in a browser is not tested. Pages load from ``file://`` and every
request that is not for the page itself is aborted and recorded, so a test can assert that a
page fetched nothing. Screenshots go to ``test-artifacts/report_html/`` (gitignored).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("LOOMCTX_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "report_html"


@pytest.fixture(scope="module")
def browser_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One browser per test module, with a fresh profile; fails without chromium.

    Module scope, not session: while Playwright's sync API is open it holds the thread's
    running event loop, and tests elsewhere that call ``asyncio.run`` would fail."""
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        pytest.fail(f"no chromium at {CHROMIUM!r}: run `make install` (apt-get install "
                    "chromium) or set LOOMCTX_CHROMIUM to the browser's path")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is not installed: pip install -e '.[dev]'")
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=ARGS,
            viewport={"width": 1280, "height": 900})
        try:
            yield context
        finally:
            context.close()


class Opened:
    """A page loaded in the browser, with the requests it tried to make beyond itself."""

    def __init__(self, page: Any, blocked: list[str]) -> None:
        self.page = page
        self.blocked = blocked

    def shot(self, name: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path


@pytest.fixture
def open_html(browser_context: Any, tmp_path: Path) -> Iterator[Any]:
    pages: list[Any] = []

    def open_(html: str, name: str) -> Opened:
        path = tmp_path / f"{name}.html"
        path.write_text(html, encoding="utf-8")
        url = path.as_uri()
        page = browser_context.new_page()
        pages.append(page)
        blocked: list[str] = []

        def guard(route: Any) -> None:
            if route.request.url == url:
                route.continue_()
            else:
                blocked.append(route.request.url)
                route.abort()

        page.route("**/*", guard)
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(url)
        page.wait_for_load_state("load")
        assert errors == [], f"the page's script failed: {errors}"
        return Opened(page, blocked)

    yield open_
    for page in pages:
        page.close()
