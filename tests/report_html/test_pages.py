"""The page functions without a browser: pinned recall, escaping, self-containment."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from loomctx.report import BuildReport, SourceReport
from loomctx.report_html import pinned_recall, render_build_html, render_session_html

XSS = '</script><img src=x onerror="alert(1)">'


def _report(rows: list[tuple[object, ...]], **kw: object) -> BuildReport:
    base: dict[str, object] = dict(
        format="openai", model="gpt-4o", counter="o200k_base", exact=True, budget=100,
        tokens=60, prefix_tokens=10, prefix_hash="ab" * 32, timings_ms={"total": 1.0},
        sources=[SourceReport(name=XSS, allocated=50, used=40, candidates=2, included=1,
                              elapsed_ms=0.5)])
    base.update(kw)
    return BuildReport(**base, _rows=rows)  # type: ignore[arg-type]


ROWS = [("p0", "s", "system", 0, True, "pinned", 5, None, 0, None),
        ("p1-in", "s", "skill", 1, True, "required", 5, 0.9, 1, None),
        ("p1-out", "s", "skill", 1, False, "budget", 50, 0.8, None, None),
        ("p1-out", "t", "skill", 1, True, "required", 5, 0.8, 2, None),  # same id, other source
        ("p1-gone", "s", "skill", 1, False, "budget", 70, 0.7, None, None),
        ("e", "s", "evidence", 3, False, "budget", 9, 0.1, None, None)]


def test_pinned_recall_counts_each_p0_p1_id_once() -> None:
    assert pinned_recall(_report(ROWS)) == (3, 4)
    assert pinned_recall(_report(ROWS[-1:])) == (0, 0)


def test_the_session_page_shows_recall_and_checks_its_arguments() -> None:
    html = render_session_html("s1", [_report(ROWS), _report(ROWS[:2])])
    assert "3/4 (75%)" in html and "2/2 (100%)" in html
    assert "—" in render_session_html("s1", [_report(ROWS[-1:])])
    with pytest.raises(ValueError, match="times has 1 entries for 2 builds"):
        render_session_html("s1", [_report(ROWS), _report(ROWS)], times=[1.0])


def test_every_report_value_is_escaped_and_nothing_is_fetched() -> None:
    rows = [(XSS, XSS, "message", 2, True, "window", 5, None, 0, None)]
    payload = {"messages": [{"role": "user", "content": XSS}]}
    for html in (render_build_html(_report(rows), rendered=payload, title=XSS),
                 render_session_html(XSS, [_report(rows)])):
        assert "<img" not in html and html.count("</script>") == 1  # the page's own script
        assert "&lt;/script&gt;&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html
        assert not re.search(r"(src|href)=\"?(https?:)?//", html)  # no network reference
        assert "Content-Security-Policy" in html


def test_a_text_request_marks_its_cached_characters() -> None:
    html = render_build_html(_report(ROWS, format="text", reused_prefix_parts=4),
                             rendered={"text": "<abc>def"})
    assert '<mark class="cached">&lt;abc</mark>&gt;def' in html


def test_rows_past_the_cap_are_counted_not_shown() -> None:
    html = render_build_html(_report(ROWS), max_rows=2)
    assert html.count('data-fate="') == 2 and "4 more rows not shown" in html


def test_the_browser_tests_fail_without_chromium(tmp_path: Path) -> None:
    """A machine without the browser must not pass the page tests by skipping them."""
    here = Path(__file__).parent
    env = {**os.environ, "LOOMCTX_CHROMIUM": str(tmp_path / "no-such-browser")}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rE",
         str(here / "test_pages_in_browser.py"), "-k", "test_every_item_is_a_row"],
        capture_output=True, text=True, env=env, cwd=here.parents[1], timeout=300)
    assert run.returncode == 1, run.stdout[-2000:]
    assert "no chromium at" in run.stdout and "1 error" in run.stdout
    assert "skipped" not in run.stdout
