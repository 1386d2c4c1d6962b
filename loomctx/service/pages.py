"""Where the HTML pages of builds and sessions plug in.

The service serves ``GET /builds/{build_id}`` and ``GET /sessions/{session_id}`` as HTML
through a :class:`Pages` object, behind the same tenant check as every route.
:func:`default_pages` gives the report pages of ``loomctx.report_html`` when that package is
there (:class:`ReportPages`), else :class:`TablePages`, the report's terminal table; another
renderer is passed as ``create_app(options, pages=...)``.
"""

from __future__ import annotations

import html
import importlib
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from loomctx.service.conversations import BuildRecord


class Pages(Protocol):
    """Renders the pages; each method returns a whole HTML document.

    Contract: called only with records of the requesting tenant; must not raise for any record
    the service holds (a build whose reply was not stored, a session without builds).
    """

    def build_page(self, record: BuildRecord) -> str: ...

    def session_page(self, session: Mapping[str, Any], builds: Sequence[BuildRecord]) -> str: ...


def _doc(title: str, body: str) -> str:
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
            f"</title></head><body><h1>{html.escape(title)}</h1>{body}</body></html>")


class TablePages:
    """Plain pages: the report table of a build, the list of a session's builds."""

    def build_page(self, record: BuildRecord) -> str:
        return _doc(f"build {record.id}", f"<pre>{html.escape(record.report.table())}</pre>")

    def session_page(self, session: Mapping[str, Any], builds: Sequence[BuildRecord]) -> str:
        rows = "".join(
            f"<tr><td><a href='/builds/{html.escape(b.id)}'>{html.escape(b.id)}</a></td>"
            f"<td>{b.report.tokens}</td><td>{b.report.budget}</td>"
            f"<td>{b.report.reused_prefix_tokens}</td></tr>" for b in builds)
        return _doc(f"session {session['id']}",
                    "<table><tr><th>build</th><th>tokens</th><th>budget</th><th>reused prefix"
                    f"</th></tr>{rows}</table>")


class ReportPages:
    """The self-contained report pages of ``loomctx.report_html`` (loaded by name: the pages
    package is optional here)."""

    def __init__(self) -> None:
        self._html = importlib.import_module("loomctx.report_html")

    def build_page(self, record: BuildRecord) -> str:
        page: str = self._html.render_build_html(record.report, rendered=record.payload,
                                                 title=f"build {record.id}")
        return page

    def session_page(self, session: Mapping[str, Any], builds: Sequence[BuildRecord]) -> str:
        page: str = self._html.render_session_html(
            str(session["id"]), list(builds), times=[b.at for b in builds],
            links=[f"/builds/{b.id}" for b in builds])
        return page


def default_pages() -> Pages:
    """:class:`ReportPages` when ``loomctx.report_html`` is installed, else :class:`TablePages`."""
    try:
        return ReportPages()
    except ImportError:
        return TablePages()


__all__ = ["Pages", "ReportPages", "TablePages", "default_pages"]
