"""The adapters' frameworks are optional: loading loomctx (and its CLI and report pages) never
loads them."""

from __future__ import annotations

import os
import subprocess
import sys


def test_the_core_loads_without_the_frameworks() -> None:
    code = ("import sys, loomctx, loomctx.cli.main, loomctx.cli.build, loomctx.report_html\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('langchain_core', 'llama_index', 'playwright')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ}, timeout=120)
    assert out.stdout.strip() == "[]"
