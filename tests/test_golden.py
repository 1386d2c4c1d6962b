"""Golden: the bundled example at 1500 tokens, rendered as text and as OpenAI messages.

The expected outputs in ``tests/golden/`` were generated once, read by eye, and frozen. A change
that moves them must be deliberate: regenerate with ``LOOMCTX_REGEN_GOLDEN=1 pytest`` and review
the diff like code.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from loomctx.cli.build import builder_from_args
from loomctx.cli.main import parser

GOLDEN = Path(__file__).parent / "golden"
NOW = 1_714_558_860.0  # one minute after the example's last message


def build_example(fmt: str) -> tuple[str, dict]:
    args = parser("build").parse_args(["build", "--example", "--max-tokens", "1500",
                                       "--format", fmt])
    builder, query, context = builder_from_args(args)
    result = builder.build_sync(query, max_tokens=1500, now=NOW, context=context)
    summary = {
        "tokens": result.tokens,
        "prefix_tokens": result.report.prefix_tokens,
        "prefix_hash": result.report.prefix_hash,
        "items": [[r.id, r.included, r.reason, r.tokens] for r in result.report.items],
    }
    if fmt == "text":
        return result.text, summary
    return json.dumps(result.payload, ensure_ascii=False, indent=1) + "\n", summary


@pytest.mark.parametrize(("fmt", "name"), [("text", "example_text.txt"),
                                           ("openai", "example_openai.json")])
def test_example_matches_golden(fmt: str, name: str) -> None:
    rendered, summary = build_example(fmt)
    report_name = name.rsplit(".", 1)[0] + ".report.json"
    report = json.dumps(summary, ensure_ascii=False, indent=1) + "\n"
    if os.environ.get("LOOMCTX_REGEN_GOLDEN"):
        (GOLDEN / name).write_text(rendered, encoding="utf-8")
        (GOLDEN / report_name).write_text(report, encoding="utf-8")
    assert rendered == (GOLDEN / name).read_text(encoding="utf-8")
    assert report == (GOLDEN / report_name).read_text(encoding="utf-8")
    assert summary["tokens"] <= 1500
