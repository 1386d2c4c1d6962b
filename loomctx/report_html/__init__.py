"""The build report as a page people read: one self-contained HTML file per build or session.

- :func:`render_build_html`: the budget split by source as a bar, every candidate in or out with
  its reason, tokens and score (a sortable, filterable table), the rendered request with the
  cached prefix marked, and the time each stage took.
- :func:`render_session_html`: a session's builds over time, with tokens used, the reusable
  prefix and the recall of pinned facts (:func:`pinned_recall`).
- :func:`render_workspace_html`: a team's model calls, each with its role, budget report
  summary, expanded notes and whole context.

Pure functions from reports to strings: ``loomctx build --report html`` writes one to a file, an
HTTP service returns one as a response. Pages load nothing from the network.
"""

from loomctx.report_html.build_page import render_build_html
from loomctx.report_html.session_page import pinned_recall, render_session_html
from loomctx.report_html.workspace_page import render_workspace_html

__all__ = ["pinned_recall", "render_build_html", "render_session_html",
           "render_workspace_html"]
