"""The report pages, opened in headless chromium: what a person sees and can do with them."""

from __future__ import annotations

from typing import Any

import pytest
from page_cases import XSS, two_turns

from loomctx.cli.main import main
from loomctx.report_html import render_build_html, render_session_html


@pytest.fixture(scope="module")
def turns() -> Any:
    return two_turns()


def _column(page: Any, key: str) -> list[str]:
    index = page.eval_on_selector_all(
        "#items thead th", f"ths => ths.findIndex(th => th.dataset.key === {key!r})")
    return page.eval_on_selector_all(
        "#items tbody tr:not([hidden])", f"rs => rs.map(r => r.cells[{index}].dataset.v ?? "
        f"r.cells[{index}].textContent)")


def test_every_item_is_a_row(open_html: Any, turns: Any) -> None:
    _, _, built = turns
    opened = open_html(render_build_html(built.report, rendered=built), "build_rows")
    page = opened.page
    ids = page.eval_on_selector_all("#items tbody tr td.id", "cs => cs.map(c => c.textContent)")
    assert sorted(ids) == sorted(r.id for r in built.report.items)
    fates = page.eval_on_selector_all("#items tbody tr", "rs => rs.map(r => r.dataset.fate)")
    assert fates.count("in") == len(built.report.included_ids)
    assert fates.count("out") > 0  # the budget is too small for everything
    assert opened.blocked == []  # nothing fetched from anywhere
    opened.shot("build")


def test_clicking_tokens_sorts_and_clicking_again_reverses(open_html: Any, turns: Any) -> None:
    _, _, built = turns
    page = open_html(render_build_html(built.report, rendered=built), "build_sort").page
    before = page.eval_on_selector_all("#items tbody tr td.id", "cs => cs.map(c => c.textContent)")
    page.click("#items th[data-key=tokens]")
    order = page.eval_on_selector_all("#items tbody tr td.id", "cs => cs.map(c => c.textContent)")
    tokens = [float(v) for v in _column(page, "tokens") if v != ""]
    assert order != before
    assert tokens == sorted(tokens, reverse=True) and tokens[0] > tokens[-1]
    assert page.get_attribute("#items th[data-key=tokens]", "aria-sort") == "descending"
    page.click("#items th[data-key=tokens]")
    again = [float(v) for v in _column(page, "tokens") if v != ""]
    assert again == sorted(again)
    page.click("#items th[data-key=source]")
    sources = _column(page, "source")
    assert sources == sorted(sources, key=str.lower)


def test_filters_hide_rows(open_html: Any, turns: Any) -> None:
    _, _, built = turns
    report = built.report
    page = open_html(render_build_html(report, rendered=built), "build_filter").page
    visible = "#items tbody tr:not([hidden])"
    total = len(report.items)
    assert len(page.query_selector_all(visible)) == total
    page.select_option("#filter-fate", "out")
    out = page.eval_on_selector_all(visible, "rs => rs.map(r => r.dataset.fate)")
    assert out and set(out) == {"out"}
    assert len(out) == total - len(report.included_ids)
    assert page.text_content("#shown") == f"{len(out)} of {total} rows shown"
    page.select_option("#filter-fate", "all")
    reason = next(r.reason for r in report.items if not r.included)
    page.select_option("#filter-reason", reason)
    assert len(page.query_selector_all(visible)) == sum(r.reason == reason for r in report.items)
    page.select_option("#filter-reason", "all")
    source = "L4_semantic"  # the retrieval source (memory and knowledge)
    assert any(r.source == source for r in report.items)
    page.fill("#filter-text", source.lower())
    shown = page.eval_on_selector_all(visible, "rs => rs.map(r => r.textContent)")
    assert shown and all(source in text for text in shown) and len(shown) < total


def test_the_bar_has_one_segment_per_source_in_proportion(open_html: Any, turns: Any) -> None:
    _, _, built = turns
    report = built.report
    page = open_html(render_build_html(report, rendered=built), "build_bar").page
    segs = page.eval_on_selector_all(
        "#budget-bar .seg",
        "ss => ss.map(s => [s.dataset.source, s.getBoundingClientRect().width])")
    used: dict[str, int] = {s.name: 0 for s in report.sources}  # the listed order first
    for row in report.items:  # counted from the item rows, apart from the source totals
        if row.included:
            used[row.source] = used.get(row.source, 0) + (row.tokens or 0)
    used = {name: n for name, n in used.items() if n > 0}
    assert [name for name, _ in segs] == list(used) and len(used) >= 3
    assert "summary" in used  # the builder's history summary is in the bar too
    bar = page.eval_on_selector("#budget-bar", "b => b.clientWidth")
    for name, width in segs:
        assert width == pytest.approx(bar * used[name] / report.budget, abs=1.5)


def test_the_cached_prefix_is_marked(open_html: Any, turns: Any) -> None:
    _, first, second = turns
    parts = second.report.reused_prefix_parts
    assert parts >= 3  # tools, system and at least the first history message repeat
    page = open_html(render_build_html(second.report, rendered=second), "build_cached").page
    marked = page.eval_on_selector_all("#request .part", "ps => ps.map(p => "
                                       "p.classList.contains('cached'))")
    assert marked == [True] * parts + [False] * (len(marked) - parts)
    assert len(marked) == 1 + len(second.messages)  # the tools block, then each message
    labels = page.eval_on_selector_all("#request .part.cached header", "hs => hs.map(h => "
                                       "h.textContent)")
    assert labels[0].startswith("tools") and all("cached" in label for label in labels)
    first_page = open_html(render_build_html(first.report, rendered=first), "build_first").page
    assert first_page.query_selector_all("#request .part.cached") == []


def test_the_timings_of_each_stage_are_shown(open_html: Any, turns: Any) -> None:
    _, _, built = turns
    page = open_html(render_build_html(built.report, rendered=built), "build_timings").page
    stages = page.eval_on_selector_all("#timings tbody tr", "rs => rs.map(r => r.dataset.stage)")
    assert stages == ["budget", "gather", "select", "compress", "render", "total"]


def test_a_script_in_a_message_is_inert_text(open_html: Any, turns: Any) -> None:
    _, first, second = turns
    pages = [open_html(render_build_html(first.report, rendered=first,
                                         title=f"build {XSS}"), "build_xss").page,
             open_html(render_session_html(XSS, [first, second]), "session_xss").page]
    for page in pages:
        assert page.evaluate("window.__xss") is None
        assert page.query_selector_all("img") == []
        assert XSS in page.inner_text("body") or XSS in page.title()
    request = pages[0].inner_text("#request")
    assert XSS in request  # the message itself, shown as written
    assert XSS in pages[0].title()


def test_the_session_page_lists_builds_over_time(open_html: Any, turns: Any) -> None:
    session, first, second = turns
    html = render_session_html(session.id, [first, second], times=[1_700_000_000.0, None],
                               links=["/builds/b1", None])
    opened = open_html(html, "session")
    page = opened.page
    rows = page.eval_on_selector_all("#builds tbody tr", "rs => rs.map(r => "
                                     "Array.from(r.cells).map(c => c.textContent))")
    assert len(rows) == 2
    assert [int(r[2]) for r in rows] == [first.tokens, second.tokens]
    assert [int(r[4]) for r in rows] == [first.report.reused_prefix_tokens,
                                         second.report.reused_prefix_tokens]
    assert rows[0][1] == "2023-11-14 22:13:20" and rows[1][1] == ""
    assert page.get_attribute("#builds a", "href") == "/builds/b1"
    assert opened.blocked == []
    opened.shot("session")


def test_the_cli_page_opens(open_html: Any, tmp_path: Any,
                            capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "example.html"
    assert main(["build", "--example", "--report", "html", "--report-out", str(out)]) == 0
    capsys.readouterr()
    opened = open_html(out.read_text(encoding="utf-8"), "cli_example")
    rows = opened.page.query_selector_all("#items tbody tr")
    segs = opened.page.query_selector_all("#budget-bar .seg")
    assert len(rows) > 1 and len(segs) >= 2 and opened.blocked == []
    opened.shot("cli_example")
