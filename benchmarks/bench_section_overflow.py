"""The two overflow modes of the text format on LoCoMo: drop whole units, or the seed's cut.

``text_overflow="drop"`` (the default) packs the budget and drops the weakest whole unit while
the text is over; ``"sections"`` (the seed's truncation compressor) packs up to twice the room
and then halves or deletes whole sections, [Context] first, [Role & Policies] never. Each LoCoMo
question is one question build of a session that holds its conversation, in both modes, at each
budget. Reported per mode and budget: evidence recall (gold turns found verbatim), the share of
the budget used, the share of builds that cut a section, and whether any text exceeded its
budget (by the independent cl100k count of ``loomctx.eval.metric``). A 4,800-token pasted input
is also built at each budget: ``drop`` refuses it (guarantee 2), ``sections`` halves it.

Run: python benchmarks/bench_section_overflow.py [--locomo PATH] [--budgets 512,1024,2048]
         [--per-conversation 20] [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from loomctx import BuildOptions, Session
from loomctx.errors import BudgetError
from loomctx.eval.datasets import load_locomo
from loomctx.eval.metric import count_tokens, recall
from loomctx.eval.records import EvalQuestion
from loomctx.testing import HashingEmbedder

HERE = Path(__file__).resolve().parent
DEFAULT_LOCOMO = HERE.parent / ".." / "shared" / "data" / "locomo" / "locomo10.json"
MODEL = "cl100k_base"
MODES = ("drop", "sections")
PASTED = "Please check this log for the refund failure:\n" + "\n".join(
    f"2026-05-{i % 28 + 1:02d} refund job {i} failed with code E{i % 7}" for i in range(300))


def _session(q: EvalQuestion, mode: str, embedder: HashingEmbedder) -> Session:
    s = Session(embedder=embedder, model=MODEL, clock=lambda: 0.0,
                system_prompt="Answer from the conversation; say when it does not tell.",
                options=BuildOptions(model=MODEL, format="text", text_overflow=mode))
    s.add_messages_sync([{"id": t.id, "role": t.role if t.role in ("user", "assistant")
                          else "user", "content": t.content, "timestamp": t.timestamp}
                         for t in q.history])
    return s


def run(args: argparse.Namespace) -> dict[str, Any]:
    questions = load_locomo(args.locomo)
    by_conv: dict[str, list[EvalQuestion]] = defaultdict(list)
    for q in questions:
        by_conv[q.id.split("/")[0]].append(q)
    rng = random.Random(7)
    convs = sorted(by_conv)[: args.conversations]
    sample = [q for c in convs for q in rng.sample(by_conv[c], min(args.per_conversation,
                                                                  len(by_conv[c])))]
    embedder = HashingEmbedder()
    out: dict[str, Any] = {"questions": len(sample), "conversations": len(convs),
                           "budgets": {}}
    sessions: dict[tuple[str, str], Session] = {}
    for budget in args.budgets:
        row: dict[str, Any] = {}
        for mode in MODES:
            recalls, use, cut, over = [], [], 0, 0
            for q in sample:
                key = (q.id.split("/")[0], mode)
                if key not in sessions:
                    sessions[key] = _session(q, mode, embedder)
                r = sessions[key].build_sync(q.question, max_tokens=budget, now=0.0)
                gold = [t.content for t in q.history if t.id in set(q.gold)]
                recalls.append(recall(r.text, gold))
                use.append(r.tokens / budget)
                cut += any(x.reason == "section_cut" for x in r.report.items)
                over += count_tokens(r.text) > budget
            try:
                Session(model=MODEL, options=BuildOptions(
                    model=MODEL, format="text", text_overflow=mode)).build_sync(
                    PASTED, max_tokens=budget)
                pasted = "built"
            except BudgetError:
                pasted = "BudgetError"
            row[mode] = {"recall": round(statistics.fmean(recalls), 3),
                         "budget_used": round(statistics.fmean(use), 3),
                         "builds_cut": round(cut / len(sample), 3), "over_budget": over,
                         "pasted_input": pasted}
            print(f"budget {budget:>5} {mode:<9} recall {row[mode]['recall']:.3f} "
                  f"used {row[mode]['budget_used']:.3f} cut {row[mode]['builds_cut']:.2f} "
                  f"over {over} pasted {pasted}", flush=True)
        out["budgets"][str(budget)] = row
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO)
    p.add_argument("--budgets", type=lambda s: [int(x) for x in s.split(",")],
                   default=[512, 1024, 2048])
    p.add_argument("--per-conversation", type=int, default=20)
    p.add_argument("--conversations", type=int, default=10)
    p.add_argument("--quick", action="store_true", help="2 conversations, 5 questions each")
    p.add_argument("--json", type=Path, default=HERE / "results" / "section_overflow.json")
    args = p.parse_args(argv)
    if args.quick:
        args.conversations, args.per_conversation = 2, 5
    if not args.locomo.is_file():
        print(f"--locomo: {str(args.locomo)!r} is not a file: give the path of locomo10.json",
              file=sys.stderr)
        return 2
    result = run(args)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
