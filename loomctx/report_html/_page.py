"""What every report page shares: escaping, the inline style and script, and a
Content-Security-Policy under which the page loads nothing from anywhere.

A page is one self-contained HTML string: it opens from a file, an e-mail attachment or an
HTTP response alike, with no network, no CDN and no other file. Every value taken from a report
(message text, item ids, source names) passes through :func:`esc`; the policy admits only the
page's own script (by its hash), so an inline event handler smuggled in by a message could not
run even if escaping were ever missed.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from functools import cache
from importlib import resources
from typing import Any

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac")
"""Source colours, in the order sources appear (cycled past ten)."""

LONG_STRING = 400
"""Strings longer than this (an image's base64 data, say) are cut when a request is shown."""


def esc(value: Any) -> str:
    """``value`` as HTML text, quotes included (safe in element content and attributes)."""
    return html.escape("" if value is None else str(value), quote=True)


def num(value: float | None, digits: int = 0) -> str:
    return "" if value is None else f"{value:.{digits}f}"


@cache
def _asset(name: str) -> str:
    return (resources.files("loomctx.report_html") / "assets" / name).read_text("utf-8")


def shown(obj: Any) -> str:
    """A JSON view of a request part for people: indented, long strings cut."""
    def cut(o: Any) -> Any:
        if isinstance(o, str) and len(o) > LONG_STRING:
            return f"{o[:LONG_STRING]}… ({len(o)} characters)"
        if isinstance(o, dict):
            return {k: cut(v) for k, v in o.items()}
        if isinstance(o, list):
            return [cut(v) for v in o]
        return o
    return json.dumps(cut(obj), ensure_ascii=False, indent=1)


def page(title: str, body: str) -> str:
    """The whole document around ``body`` (already escaped HTML)."""
    script = _asset("report.js")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    policy = (f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{digest}'; "
              "img-src data:; base-uri 'none'; form-action 'none'")
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{esc(policy)}\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(title)}</title><style>{_asset('report.css')}</style></head>\n"
            f"<body>\n{body}\n<script>{script}</script>\n</body></html>\n")


__all__ = ["LONG_STRING", "PALETTE", "esc", "num", "page", "shown"]
