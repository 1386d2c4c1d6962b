"""The build report as a page: build twice in a session, write each build's page and the
session's page as self-contained HTML files (open them in any browser; they load nothing).

The same pages come from ``loomctx build --example --report html --report-out report.html``.

Run: python examples/report_page.py   (the pages go to a loomctx-pages folder in the temp dir)
"""

import tempfile
from pathlib import Path

from loomctx import HashingEmbedder, Session
from loomctx.report_html import pinned_recall, render_build_html, render_session_html

out = Path(tempfile.gettempdir()) / "loomctx-pages"  # one folder, rewritten by every run
out.mkdir(parents=True, exist_ok=True)
session = Session(system_prompt="You are a shipping assistant.", embedder=HashingEmbedder())
builds = []
for n in range(3):
    session.add_message_sync("user", f"Where is shipment SHP-{40000 + n}? " + "Details. " * 20)
    builds.append(session.build_sync(max_tokens=300))
    session.add_message_sync("assistant", f"SHP-{40000 + n} is on customs hold in Lyon.")

for n, built in enumerate(builds, 1):
    page = out / f"build-{n}.html"
    page.write_text(render_build_html(built.report, rendered=built), encoding="utf-8")
    present, total = pinned_recall(built.report)
    print(f"{page.name}: {built.tokens} tokens, {built.report.reused_prefix_tokens} cached, "
          f"pinned recall {present}/{total}")
(out / "session.html").write_text(
    render_session_html(session.id, builds, links=[f"build-{n}.html" for n in (1, 2, 3)]),
    encoding="utf-8")
print(f"wrote {len(builds) + 1} pages to {out}")
assert builds[-1].report.reused_prefix_tokens > 0
