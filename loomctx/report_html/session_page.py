"""A session as a page: its builds over time, tokens used, reusable prefix, pinned recall."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from loomctx.report import BuildReport
from loomctx.report_html._page import esc, page


def pinned_recall(report: BuildReport) -> tuple[int, int]:
    """``(present, total)`` over the build's pinned and required facts.

    A *pinned or required fact* is a candidate of tier P0 (pinned: never dropped) or P1
    (required: named skills, task state), counted once per id however many sources offered
    it; it is *present* when the build included it, whole or cut with a marker. Recall is
    ``present / total``; a build with no such candidate has ``total == 0`` and no recall. Below
    1.0 means the budget could not hold everything the caller marked as essential.
    """
    fate: dict[str, bool] = {}
    for row in report.items:
        if row.tier <= 1:
            fate[row.id] = fate.get(row.id, False) or row.included
    return sum(fate.values()), len(fate)


def render_session_html(session_id: str, builds: Sequence[Any], *,
                        times: Sequence[float | None] | None = None,
                        links: Sequence[str | None] | None = None,
                        title: str | None = None) -> str:
    """A self-contained HTML page listing a session's builds, oldest first.

    ``builds`` holds :class:`~loomctx.report.BuildReport` objects, or anything with a
    ``report`` (a :class:`~loomctx.builder.BuildResult`). ``times`` (Unix seconds, one per build
    or None) and ``links`` (a URL per build's own page, or None) are optional; when given they
    must have one entry per build.
    """
    reports: list[BuildReport] = [getattr(b, "report", b) for b in builds]
    for name, seq in (("times", times), ("links", links)):
        if seq is not None and len(seq) != len(reports):
            raise ValueError(f"{name} has {len(seq)} entries for {len(reports)} builds: "
                             "pass one per build (None where unknown)")
    head = title or f"Session {session_id}"
    rows = []
    for n, r in enumerate(reports):
        at = times[n] if times is not None else None
        link = links[n] if links is not None else None
        present, total = pinned_recall(r)
        recall = f"{present}/{total} ({present / total:.0%})" if total else "—"
        share = r.tokens / r.budget if r.budget else 0.0
        reused = r.reused_prefix_tokens / r.budget if r.budget else 0.0
        when = (datetime.fromtimestamp(at, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
                if at is not None else "")
        label = f'<a href="{esc(link)}">build {n + 1}</a>' if link else f"build {n + 1}"
        rows.append(
            f'<tr data-build="{n}"><td>{label}</td><td class="mono">{esc(when)}</td>'
            f'<td class="num" data-v="{r.tokens}">{r.tokens}</td>'
            f'<td class="num" data-v="{r.budget}">{r.budget}</td>'
            f'<td class="num" data-v="{r.reused_prefix_tokens}">{r.reused_prefix_tokens}</td>'
            f'<td class="num" data-v="{r.prefix_tokens}">{r.prefix_tokens}</td>'
            f'<td class="num" data-v="{present / total if total else ""}">{recall}</td>'
            f'<td><div class="usage" title="used {r.tokens}, reused {r.reused_prefix_tokens}">'
            f'<div class="used" style="width:{100 * share:.2f}%"></div>'
            f'<div class="reused" style="width:{100 * reused:.2f}%"></div></div></td></tr>')
    used = sum(r.tokens for r in reports)
    reused_total = sum(r.reused_prefix_tokens for r in reports)
    summary = (f'<p class="meta"><b>{len(reports)}</b> builds · <b>{used}</b> tokens sent · '
               f'<b>{reused_total}</b> of them repeat the previous request (cacheable)</p>')
    body = (f"<h1>{esc(head)}</h1>{summary}"
            '<table id="builds"><thead><tr><th>build</th><th>at (UTC)</th>'
            '<th class="num">tokens</th><th class="num">budget</th>'
            '<th class="num">reusable prefix</th><th class="num">stable prefix</th>'
            '<th class="num">pinned recall</th><th>used / reused of budget</th></tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>'
            '<p class="note">Pinned recall: of the build\'s P0 (pinned) and P1 (required) '
            'candidates, how many it included.</p>')
    return page(head, body)


__all__ = ["pinned_recall", "render_session_html"]
