"""A team's workspace as a page: what each role saw, call by call (each sees a different context).

One row per model call — the role (and action) that made it, the wire format, tokens against the
role's budget, the budget report's summary (items shown whole, shortened, dropped), the notes the
context expanded (``@refs``) and the settings the provider could not take — each with its whole
context and reply folded beneath it. Input is the call summaries a saved workspace keeps
(:func:`loomctx.workflow.record.load_calls`), plain dicts, so the page needs no live team.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loomctx.report_html._page import esc, page


def _ids(values: Sequence[str], prefix: str = "") -> str:
    return esc(" ".join(prefix + v for v in values)) or "—"


def render_workspace_html(session: str, calls: Sequence[Mapping[str, Any]], *,
                          notes: Sequence[Mapping[str, Any]] = (),
                          title: str | None = None) -> str:
    """A self-contained HTML page of a workspace's model calls (and its notes, when given)."""
    head = title or f"Workspace {session}"
    rows = []
    for n, c in enumerate(calls, start=1):
        r = c["report"]
        role = c["role"] + (f" · {c['action']}" if c.get("action") else "")
        share = c["tokens"] / c["budget"] if c["budget"] else 0.0
        settings_notes = "".join(f"<li>{esc(x)}</li>" for x in c.get("notes", ()))
        rows.append(
            f'<tr data-call="{n}"><td class="num">{n}</td><td>{esc(role)}</td>'
            f'<td class="mono">{esc(c["format"])}</td>'
            f'<td class="num" data-v="{c["tokens"]}">{c["tokens"]}</td>'
            f'<td class="num" data-v="{c["budget"]}">{c["budget"]}</td>'
            f'<td><div class="usage" title="{share:.0%} of the budget">'
            f'<div class="used" style="width:{100 * min(share, 1.0):.2f}%"></div></div></td>'
            f'<td class="num">{r["included"]}/{r["items"]}</td>'
            f'<td class="mono">{_ids(r["shortened"])}</td>'
            f'<td class="mono">{_ids(r["dropped"])}</td>'
            f'<td class="mono">{_ids(c.get("expanded", ()), "@")}</td></tr>'
            f'<tr class="detail"><td></td><td colspan="9">'
            + (f'<ul class="note">{settings_notes}</ul>' if settings_notes else "")
            + f'<details><summary>context</summary><pre class="text">{esc(c["context"])}'
            f'</pre></details><details><summary>reply</summary><pre class="text">'
            f'{esc(c.get("reply", ""))}</pre></details></td></tr>')
    note_rows = "".join(
        f'<tr><td class="mono">@{esc(x["id"])}</td><td>{esc(x.get("source") or "")}</td>'
        f'<td><pre class="text">{esc(x["content"])}</pre></td></tr>' for x in notes)
    sent = sum(int(c["tokens"]) for c in calls)
    estimated = any(not c["report"].get("exact", True) for c in calls)
    body = (f"<h1>{esc(head)}</h1>"
            f'<p class="meta"><b>{len(calls)}</b> model calls · <b>{sent}</b> tokens sent'
            + (" (estimated: a character estimate that errs high)" if estimated else "")
            + f" · <b>{len(notes)}</b> notes</p>"
            '<table id="calls"><thead><tr><th class="num">#</th><th>role</th><th>format</th>'
            '<th class="num">tokens</th><th class="num">budget</th><th>of budget</th>'
            '<th class="num">items shown</th><th>shortened</th><th>dropped</th>'
            f'<th>expanded</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
            + (f'<h2>Notes</h2><table id="notes"><tbody>{note_rows}</tbody></table>'
               if notes else "")
            + '<p class="note">Shortened: items shown as shorter previews than the seed\'s, '
            "or cut; dropped: items the budget could not hold.</p>")
    return page(head, body)


__all__ = ["render_workspace_html"]
