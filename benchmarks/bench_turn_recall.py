"""Recall inside the agent loop: LoCoMo questions asked as turns, against ``build(question)``.

An agent adds the user's message and builds a *turn* (``build()``); other libraries teach
``build(question)``. This asks each LoCoMo question both ways on the same session, at the same
budget: first ``build(question)`` (a question build changes no state), then the question is added
as the next user message and the turn is built. Questions accumulate in the session as an agent's
turns would (no answers are added), so the turn window grows, compacts and carries what earlier
turns recalled, as in a real loop. A third system packs the last messages that fit (the naive
window). Gold evidence counts when its id is reported included and its whole text is in the
request's messages (cl100k, over budget scores 0: :func:`loomctx.eval.metric.score_build`).

Each turn build's prefix reuse against the previous turn build is reported too (the share of the
request that repeats the previous one from the start, as a provider's prompt cache reuses it).

With ``--generic PATH`` (the LongMemEval_S development sample, generic JSONL) each question has
a history of its own (~500 messages): it is asked both ways after that history, and the results
are pooled over the questions.

Run: python benchmarks/bench_turn_recall.py --data PATH/locomo10.json [--conversations 1,6]
         [--budgets 4096,16384] [--limit N] [--json PATH] [--embed-cache PATH]
     python benchmarks/bench_turn_recall.py --generic PATH/longmemeval_s_dev60.jsonl.gz [...]
     python benchmarks/bench_turn_recall.py --multilingual [...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from _replays import context_text

HERE = Path(__file__).resolve().parent
MODEL = "cl100k_base"


def conversations(data: Path | None, wanted: set[int] | None,
                  dataset: str = "locomo") -> list[tuple[int, list[Any]]]:
    """A data set's conversations numbered from 1 (those in ``wanted``, every one when None),
    each with its questions."""
    from loomctx.eval.datasets import iter_dataset

    out: list[tuple[int, list[Any]]] = []
    for q in iter_dataset(dataset, data):
        if not out or q.history is not out[-1][1][0].history:
            out.append((len(out) + 1, []))
        out[-1][1].append(q)
    return [(n, qs) for n, qs in out if wanted is None or n in wanted]


def _session(history: Any, embedder: Any) -> Any:
    from loomctx.builder import BuildOptions
    from loomctx.session import Session

    session = Session(model=MODEL, embedder=embedder, clock=lambda: 0.0,
                      options=BuildOptions(model=MODEL, format="openai"))
    session.add_messages_sync([
        {"id": t.id, "role": t.role if t.role in ("user", "assistant") else "user",
         "content": t.content, "timestamp": t.timestamp} for t in history])
    return session


def _naive(history: Any, asked: list[str], budget: int) -> tuple[str, set[str]]:
    """The last messages that fit, the question last (cl100k, one line each)."""
    from loomctx.eval.metric import count_tokens

    lines: list[str] = []
    ids: set[str] = set()
    used = count_tokens(asked[-1]) + 1
    for t in reversed(history):
        n = count_tokens(t.content) + 1
        if used + n > budget:
            break
        used += n
        lines.append(t.content)
        ids.add(t.id)
    return "\n".join([*reversed(lines), asked[-1]]), ids


def run_conversation(number: int, questions: list[Any], budget: int, embedder: Any,
                     limit: int | None) -> dict[str, Any]:
    from loomctx.eval.cache import prefix_reuse
    from loomctx.eval.metric import score_build
    from loomctx.tokens.registry import counter_for_model

    counter = counter_for_model(MODEL).counter

    history = questions[0].history
    by_id = {t.id: t.content for t in history}
    now = max((t.timestamp for t in history if t.timestamp is not None), default=0.0)
    if questions[0].question_time is not None:  # a question asked after its history ends
        now = questions[0].question_time
    session = _session(history, embedder)
    scores: dict[str, list[float]] = {"turn": [], "question": [], "naive": []}
    reuse: list[float] = []
    over = {"turn": 0, "question": 0}
    turn_ms: list[float] = []
    previous: dict[str, Any] | None = None
    asked: list[str] = []
    for q in questions[:limit]:
        gold = [(g, by_id[g]) for g in q.gold]
        r = session.build_sync(q.question, max_tokens=budget, now=now)
        s = score_build(context_text(r.payload), set(r.report.included_ids), gold, budget)
        scores["question"].append(s.recall)
        over["question"] += s.over_budget
        session.add_message_sync("user", q.question, timestamp=now)
        asked.append(q.question)
        t0 = time.perf_counter()
        r = session.build_sync(max_tokens=budget, now=now)
        turn_ms.append((time.perf_counter() - t0) * 1000)
        s = score_build(context_text(r.payload), set(r.report.included_ids), gold, budget)
        scores["turn"].append(s.recall)
        over["turn"] += s.over_budget
        if previous is not None:
            reuse.append(prefix_reuse(previous, r.payload, counter).share)
        previous = r.payload
        text, ids = _naive(history, asked, budget)
        scores["naive"].append(score_build(text, ids, gold, budget).recall)
    return {"conversation": number, "budget": budget, "questions": len(scores["turn"]),
            "recall": {k: statistics.fmean(v) for k, v in scores.items()},
            "over_budget": over,
            "reuse": {"mean": statistics.fmean(reuse) if reuse else None,
                      "median": statistics.median(reuse) if reuse else None},
            "turn_build_ms_p50": statistics.median(turn_ms)}


def _pooled(data: Path, budgets: list[int], embedder: Any, limit: int | None,
            out: str) -> int:
    """Each question of a generic file after its own history; recall pooled per budget."""
    from itertools import islice

    from loomctx.eval.datasets import iter_dataset

    questions = list(islice(iter_dataset("generic", data), limit))
    pooled = []
    for budget in budgets:
        runs = [run_conversation(i + 1, [q], budget, embedder, None)
                for i, q in enumerate(questions)]
        rec = {k: statistics.fmean(r["recall"][k] for r in runs)
               for k in ("turn", "question", "naive")}
        over = {k: sum(r["over_budget"][k] for r in runs) for k in ("turn", "question")}
        pooled.append({"budget": budget, "questions": len(runs), "recall": rec,
                       "over_budget": over,
                       "turn_build_ms_p50": statistics.median(r["turn_build_ms_p50"]
                                                              for r in runs)})
        print(f"{data.name} budget {budget:6d} n={len(runs):3d}  turn {rec['turn']:.3f}  "
              f"question {rec['question']:.3f}  naive {rec['naive']:.3f}  over {over}",
              flush=True)
    doc = {"model": MODEL, "data": data.name, "pooled": pooled}
    if out == "-":
        print(json.dumps(doc, indent=1))
    else:
        Path(out).write_text(json.dumps(doc, indent=1) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = ap.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", help="locomo10.json")
    source.add_argument("--multilingual", action="store_true",
                        help="the generated multilingual conversations (English, Chinese, "
                             "code-switched), every one")
    source.add_argument("--generic", metavar="PATH",
                        help="a generic JSONL file (LongMemEval_S): each question after its own "
                             "history, pooled")
    ap.add_argument("--conversations", default="1,6",
                    help="conversation numbers, 1-10 (default 1,6: one per split)")
    ap.add_argument("--budgets", default="4096,16384")
    ap.add_argument("--limit", type=int, default=None, help="questions per conversation")
    ap.add_argument("--json", default=str(HERE / "results" / "turn_recall.json"))
    ap.add_argument("--embed-cache", default=None, metavar="PATH",
                    help="a SQLite file keeping every embedding between runs (as `loomctx eval "
                         "--embed-cache`)")
    args = ap.parse_args(argv)
    try:
        wanted = {int(x) for x in args.conversations.split(",") if x.strip()}
        budgets = [int(x) for x in args.budgets.split(",") if x.strip()]
    except ValueError:
        print("bench_turn_recall: --conversations and --budgets are comma-separated integers",
              file=sys.stderr)
        return 2
    data = Path(args.data or args.generic or ".")
    if not args.multilingual and not data.is_file():
        flag = "--data" if args.data else "--generic"
        print(f"bench_turn_recall: {flag} {str(data)!r} is not a file", file=sys.stderr)
        return 2
    from loomctx.embed.cache import CachedEmbedder
    from loomctx.embed.default import default_embedder

    store = None
    if args.embed_cache is not None:
        from loomctx.stores.sqlite import SQLiteStore

        if Path(args.embed_cache).is_dir():
            print(f"bench_turn_recall: --embed-cache {args.embed_cache!r} is a directory; name "
                  "a SQLite file", file=sys.stderr)
            return 2
        store = SQLiteStore(Path(args.embed_cache))
    embedder = CachedEmbedder(default_embedder(), store=store)
    if args.generic:
        return _pooled(data, budgets, embedder, args.limit, args.json)
    runs = []
    chosen = conversations(None, None, "multilingual") if args.multilingual \
        else conversations(data, wanted)
    for number, questions in chosen:
        for budget in budgets:
            run = run_conversation(number, questions, budget, embedder, args.limit)
            runs.append(run)
            rec = run["recall"]
            print(f"conv {number:2d} budget {budget:6d} n={run['questions']:3d}  "
                  f"turn {rec['turn']:.3f}  question {rec['question']:.3f}  "
                  f"naive {rec['naive']:.3f}  reuse {run['reuse']['mean'] or 0:.3f}  "
                  f"over {run['over_budget']}  turn p50 {run['turn_build_ms_p50']:.1f} ms",
                  flush=True)
    doc = {"model": MODEL, "runs": runs}
    if args.json == "-":
        print(json.dumps(doc, indent=1))
    else:
        Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
