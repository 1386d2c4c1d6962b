"""One build as a page: budget bar, item table, the request with its cached prefix, timings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loomctx.report import REASONS, BuildReport, ItemReport
from loomctx.report_html._page import PALETTE, esc, num, page, shown

MAX_ROWS = 2_000
"""Item rows shown by default (included first, then the dropped in report order). A page with
10k rows is ~5 MB and re-sorts in seconds; the JSON report keeps every row."""

STAGES = ("budget", "gather", "select", "compress", "render")
"""The builder's timed stages, in pipeline order (``render`` covers layout, rendering and the
verify re-count; ``total`` is shown apart)."""

COLUMNS = (("position", "#", "num"), ("id", "id", "text"), ("source", "source", "text"),
           ("kind", "kind", "text"), ("tier", "tier", "num"), ("fate", "in/out", "text"),
           ("reason", "reason", "text"), ("tokens", "tokens", "num"), ("score", "score", "num"))
"""The item table's columns: key, header, how the page sorts it."""


def render_build_html(report: BuildReport, *, rendered: Any = None, title: str | None = None,
                      max_rows: int = MAX_ROWS) -> str:
    """A self-contained HTML page for one build.

    ``rendered`` is what was sent: a :class:`~loomctx.render.protocol.Rendered`, a
    :class:`~loomctx.builder.BuildResult` (anything with a ``payload``) or the payload mapping
    itself; without it the page has no request section. The first
    ``report.reused_prefix_parts`` parts of the request are marked as the cached prefix.
    """
    colours = {s.name: PALETTE[n % len(PALETTE)] for n, s in enumerate(report.sources)}
    extra = _unlisted(report)
    for n, name in enumerate(extra, len(colours)):
        colours[name] = PALETTE[n % len(PALETTE)]
    head = title or f"Build report · {report.model}"
    body = [f"<h1>{esc(head)}</h1>", _summary(report),
            "<h2>Budget by source</h2>", _bar(report, colours, extra),
            _sources(report, colours, extra),
            "<h2>Stage timings</h2>", _timings(report),
            "<h2>Candidate items</h2>", _items(report, colours, max_rows)]
    payload = getattr(rendered, "payload", rendered)
    if payload is not None:
        body += ["<h2>Rendered request</h2>", _request(report, payload)]
    return page(head, "\n".join(body))


def _summary(r: BuildReport) -> str:
    estimated = "" if r.exact else " (estimated)"
    failed = "".join(f'<p class="warn">source {esc(s.name)} failed: {esc(s.error)}</p>'
                     for s in r.failed_sources)
    return (f'<p class="meta">model <b>{esc(r.model)}</b> · format <b>{esc(r.format)}</b> · '
            f'counter <b>{esc(r.counter)}</b>{estimated}</p>'
            f'<p class="meta">used <b id="used">{r.tokens}</b> of <b id="budget">{r.budget}</b>'
            f' tokens · stable prefix <b>{r.prefix_tokens}</b> tokens '
            f'<span class="mono">#{esc(r.prefix_hash[:12])}</span> · repeats the previous '
            f'request: <b id="reused">{r.reused_prefix_tokens}</b> tokens</p>{failed}')


def _unlisted(r: BuildReport) -> dict[str, int]:
    """Tokens of included items from no listed source (the history summary the builder
    writes), by their source name, so the bar accounts for them too."""
    listed = {s.name for s in r.sources}
    out: dict[str, int] = {}
    for i in r.items:
        if i.included and i.source not in listed:
            out[i.source] = out.get(i.source, 0) + (i.tokens or 0)
    return out


def _bar(r: BuildReport, colours: Mapping[str, str], extra: Mapping[str, int]) -> str:
    """One segment per source that used tokens; widths are shares of the budget."""
    segs = []
    for name, used in [*((s.name, s.used) for s in r.sources), *extra.items()]:
        if used <= 0:
            continue
        width = 100.0 * used / r.budget if r.budget else 0.0
        segs.append(f'<div class="seg" data-source="{esc(name)}" data-tokens="{used}" '
                    f'style="width:{width:.4f}%;background:{colours[name]}" '
                    f'title="{esc(name)}: {used} tokens"></div>')
    return (f'<div class="bar" id="budget-bar" role="img" aria-label="tokens used by source, '
            f'of a budget of {r.budget}">{"".join(segs)}</div>')


def _sources(r: BuildReport, colours: Mapping[str, str], extra: Mapping[str, int]) -> str:
    rows = []
    for s in r.sources:
        status = f'<span class="warn">failed: {esc(s.error)}</span>' if s.error else "ok"
        rows.append(f'<tr><td><span class="swatch" style="background:{colours[s.name]}"></span>'
                    f'{esc(s.name)}</td><td class="num">{s.allocated}</td>'
                    f'<td class="num">{s.used}</td><td class="num">{s.included}/{s.candidates}'
                    f'</td><td class="num">{s.elapsed_ms:.1f}</td><td>{status}</td></tr>')
    for name, used in extra.items():
        rows.append(f'<tr><td><span class="swatch" style="background:{colours[name]}"></span>'
                    f'{esc(name)}</td><td class="num">—</td><td class="num">{used}</td>'
                    '<td></td><td></td><td>written by the builder</td></tr>')
    return ('<table id="sources"><thead><tr><th>source</th><th class="num">allocated</th>'
            '<th class="num">used</th><th class="num">items in</th><th class="num">gather ms'
            f'</th><th>status</th></tr></thead><tbody>{"".join(rows)}</tbody></table>')


def _timings(r: BuildReport) -> str:
    t = r.timings_ms
    names = [k for k in STAGES if k in t] + [k for k in t if k not in STAGES and k != "total"]
    top = max((t[k] for k in names), default=0.0) or 1.0
    rows = "".join(
        f'<tr data-stage="{esc(k)}"><td>{esc(k)}</td><td class="num">{t[k]:.2f}</td>'
        f'<td><span class="stage" style="width:{200 * t[k] / top:.1f}px"></span></td></tr>'
        for k in names)
    total = (f'<tr data-stage="total"><td><b>total</b></td><td class="num"><b>{t["total"]:.2f}'
             '</b></td><td></td></tr>' if "total" in t else "")
    return ('<table id="timings"><thead><tr><th>stage</th><th class="num">ms</th><th></th></tr>'
            f'</thead><tbody>{rows}{total}</tbody></table>'
            '<p class="note">render covers the layout (structure), the format\'s renderer and '
            'the verify re-count.</p>')


def _items(r: BuildReport, colours: Mapping[str, str], max_rows: int) -> str:
    items = sorted(r.items, key=lambda i: (not i.included,
                                            i.position if i.position is not None else 0))
    rest = len(items) - max_rows
    items = items[:max_rows]
    reasons = sorted({i.reason for i in r.items})
    options = "".join(f'<option value="{esc(x)}">{esc(x)}</option>' for x in reasons)
    heads = "".join(f'<th data-key="{k}" data-type="{t}"{" class=num" if t == "num" else ""}>'
                    f'<button type="button">{h}</button></th>' for k, h, t in COLUMNS)
    rows = "".join(_row(i, colours) for i in items)
    more = (f'<p class="note">{rest} more rows not shown: the JSON report has them all.</p>'
            if rest > 0 else "")
    return ('<div class="controls"><input type="search" id="filter-text" '
            'placeholder="filter: id, source, kind, reason…" aria-label="filter rows">'
            '<label>in/out <select id="filter-fate"><option value="all">all</option>'
            '<option value="in">in</option><option value="out">out</option></select></label>'
            f'<label>reason <select id="filter-reason"><option value="all">all</option>{options}'
            f'</select></label><span class="shown" id="shown">{len(items)} rows</span></div>'
            f'<table id="items"><thead><tr>{heads}</tr></thead><tbody>{rows}</tbody></table>'
            f'{more}')


def _row(i: ItemReport, colours: Mapping[str, str]) -> str:
    fate = "in" if i.included else "out"
    why = REASONS.get(i.reason, "")
    reason = esc(i.reason) + (f" → in {esc(i.summarized_in)}" if i.summarized_in else "")
    colour = colours.get(i.source, "#bab0ac")
    return (f'<tr class="{fate}" data-fate="{fate}" data-reason="{esc(i.reason)}">'
            f'<td class="num" data-v="{num(i.position)}">{num(i.position)}</td>'
            f'<td class="id mono">{esc(i.id)}</td>'
            f'<td><span class="swatch" style="background:{colour}"></span>{esc(i.source)}</td>'
            f'<td>{esc(i.kind)}</td><td class="num" data-v="{i.tier}">P{i.tier}</td>'
            f'<td><span class="badge {fate}">{fate}</span></td>'
            f'<td title="{esc(why)}">{reason}</td>'
            f'<td class="num" data-v="{num(i.tokens)}">{num(i.tokens)}</td>'
            f'<td class="num" data-v="{num(i.score, 4)}">{num(i.score, 3)}</td></tr>')


def parts(payload: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """A chat request's parts in the order :func:`loomctx.render.verify.reused_parts` counts
    them: the tools block, the ``system`` field, then each message."""
    out: list[tuple[str, Any]] = []
    if payload.get("tools"):
        out.append((f"tools ({len(payload['tools'])})", payload["tools"]))
    if "system" in payload:
        out.append(("system", payload["system"]))
    for n, m in enumerate(payload.get("messages", [])):
        role = m.get("role", "?") if isinstance(m, Mapping) else "?"
        out.append((f"message {n} · {role}", m))
    return out


def _request(r: BuildReport, payload: Mapping[str, Any]) -> str:
    cached = r.reused_prefix_parts
    note = (f'<p class="note">The marked start repeats the previous request byte for byte '
            f'({r.reused_prefix_tokens} tokens): a provider\'s prompt cache can reuse it.</p>'
            if cached else '<p class="note">No part of this request repeats a previous one '
            '(a first build, or the start changed).</p>')
    if "text" in payload:
        text = str(payload["text"])
        return (f'{note}<pre class="text" id="request" data-cached-chars="{cached}">'
                f'<mark class="cached">{esc(text[:cached])}</mark>{esc(text[cached:])}</pre>')
    blocks = []
    for n, (label, obj) in enumerate(parts(payload)):
        hit = n < cached
        badge = ' <span class="badge cached">cached</span>' if hit else ""
        body = _message_text(obj) if label.startswith("message") else shown(obj)
        blocks.append(f'<div class="part{" cached" if hit else ""}" data-part="{n}">'
                      f'<header>{esc(label)}{badge}</header><pre>{esc(body)}</pre></div>')
    return f'{note}<div id="request">{"".join(blocks)}</div>'


def _message_text(m: Any) -> str:
    """A message as people read it: its text as is, anything else (tool calls, images, content
    blocks) as indented JSON."""
    if not isinstance(m, Mapping):
        return shown(m)
    content = m.get("content")
    rest = {k: v for k, v in m.items() if k not in ("role", "content")}
    text = content if isinstance(content, str) else ("" if content is None else shown(content))
    return text + (("\n" if text else "") + shown(rest) if rest else "")


__all__ = ["COLUMNS", "MAX_ROWS", "STAGES", "parts", "render_build_html"]
