"""``aggregate_context`` over 10 sessions: one budget against the seed's equal split.

The ten LoCoMo conversations are ten sessions of one agent (one controller, one store). Each
LoCoMo question is asked of the agent as a whole — ``aggregate_context`` over all ten sessions —
and scored by whether its evidence turns (all in one session: its conversation) are in the
context, verbatim. Two policies share the same builder, ranking and budget:

- ``one-budget`` (loomctx): one ranking, one budget; every token goes to the best next candidate,
  whichever session holds it.
- ``equal-split`` (the seed project's policy): each session builds within ``budget / 10`` tokens
  (a hard ceiling per session), then the results are merged.

Recall is reported per session (the mean over the questions whose evidence it holds) and over
all questions. A question sample is drawn per conversation with a fixed seed.

Run: python benchmarks/bench_aggregate.py [--locomo PATH] [--budgets 1000,2000,4000]
         [--per-session 20] [--embedder default|use|hashing] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from loomctx import BuildOptions, InMemoryStore
from loomctx.budget.manager import BudgetManager, Limit
from loomctx.builder import ContextBuilder
from loomctx.controller import ContextController
from loomctx.controller.sources import SessionSource
from loomctx.embed.default import default_embedder
from loomctx.embed.use import UniversalSentenceEncoder
from loomctx.eval.datasets import load_locomo
from loomctx.eval.metric import count_tokens, recall
from loomctx.eval.records import EvalQuestion
from loomctx.sources.static import UserInputSource
from loomctx.testing import HashingEmbedder

HERE = Path(__file__).resolve().parent
DEFAULT_LOCOMO = HERE.parent / ".." / "shared" / "data" / "locomo" / "locomo10.json"
MODEL = "cl100k_base"


def _controller(questions: list[EvalQuestion], embedder: Any) -> tuple[ContextController,
                                                                        dict[str, str]]:
    """One session per conversation; returns the controller and question-prefix → session."""
    c = ContextController("assistant", store=InMemoryStore(), embedder=embedder, model=MODEL)
    by_conv: dict[str, str] = {}
    seen: set[int] = set()
    for q in questions:
        conv = q.id.split("/")[0]
        if id(q.history) in seen:
            continue
        seen.add(id(q.history))
        session = c.create_session(f"conv-{conv}", clock=lambda: 0.0,
                                   options=BuildOptions(model=MODEL, format="text"))
        session.add_messages_sync([
            {"id": t.id, "role": t.role if t.role in ("user", "assistant") else "user",
             "content": t.content, "timestamp": t.timestamp} for t in q.history])
        by_conv[conv] = session.id
    return c, by_conv


async def _equal_split(c: ContextController, query: str, budget: int) -> str:
    """The seed's policy: the same sources, each capped at an equal share of the budget (the
    question is the pinned input in both policies, as in ``aggregate_context``)."""
    sessions = list(c.sessions.values())
    share = budget // len(sessions)
    names = [f"session:{s.id}" for s in sessions]
    manager = BudgetManager(ratios={n: 1 / len(names) for n in names},
                            limits={n: Limit(ceiling=share) for n in names})
    builder = ContextBuilder([*(SessionSource(s) for s in sessions), UserInputSource()],
                             options=BuildOptions(model=MODEL, format="text"), budget=manager,
                             tenant=c.tenant)
    result = await builder.build(query, max_tokens=budget)
    return result.text


async def _one_budget(c: ContextController, query: str, budget: int) -> str:
    result = await c.aggregate_context(None, query, budget, include_agent_memory=False,
                                       options=BuildOptions(model=MODEL, format="text"))
    return result.text


def run(args: argparse.Namespace) -> dict[str, Any]:
    questions = load_locomo(args.locomo)
    rng = random.Random(7)
    by_conv: dict[str, list[EvalQuestion]] = defaultdict(list)
    for q in questions:
        by_conv[q.id.split("/")[0]].append(q)
    sample = [q for conv in sorted(by_conv) for q in
              rng.sample(by_conv[conv], min(args.per_session, len(by_conv[conv])))]
    embedders = {"hashing": HashingEmbedder, "use": UniversalSentenceEncoder,
                 "default": default_embedder}
    embedder = embedders[args.embedder]()
    t0 = time.perf_counter()
    controller, session_of = _controller(questions, embedder)
    ingest = time.perf_counter() - t0
    policies = {"one-budget": _one_budget, "equal-split": _equal_split}
    out: dict[str, Any] = {"sessions": len(controller.sessions), "questions": len(sample),
                           "ingest_s": round(ingest, 1), "embedder": args.embedder,
                           "budgets": {}}
    for budget in args.budgets:
        row: dict[str, Any] = {}
        for name, policy in policies.items():
            per_session: dict[str, list[float]] = defaultdict(list)
            over = 0
            for q in sample:
                text = asyncio.run(policy(controller, q.question, budget))
                over += count_tokens(text) > budget
                gold = [t.content for t in q.history if t.id in set(q.gold)]
                per_session[session_of[q.id.split("/")[0]]].append(recall(text, gold))
            means = {s: statistics.fmean(v) for s, v in sorted(per_session.items())}
            row[name] = {"recall": round(statistics.fmean(
                r for v in per_session.values() for r in v), 3),
                "per_session": {s: round(m, 3) for s, m in means.items()},
                "worst_session": round(min(means.values()), 3), "over_budget": over}
        out["budgets"][str(budget)] = row
        print(f"budget {budget}: " + "  ".join(
            f"{n} {r['recall']:.3f} (worst session {r['worst_session']:.3f}, "
            f"over budget {r['over_budget']})" for n, r in row.items()), flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO)
    p.add_argument("--budgets", type=lambda s: [int(x) for x in s.split(",")],
                   default=[1000, 2000, 4000])
    p.add_argument("--per-session", type=int, default=20)
    # aggregate.json was measured with "use", the default when it was recorded.
    p.add_argument("--embedder", choices=("default", "use", "hashing"), default="default")
    p.add_argument("--json", type=Path, default=HERE / "results" / "aggregate.json")
    args = p.parse_args(argv)
    if not args.locomo.is_file():
        print(f"error: LoCoMo not found at {args.locomo}; pass --locomo PATH", file=sys.stderr)
        return 2
    out = run(args)
    args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
