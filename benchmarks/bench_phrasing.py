"""Recall however people talk: each question in each phrasing, as a turn and as a question build.

The data sets word every question as a question; people ask an agent with requests, chatter,
a question inside a longer message, a follow-up over two turns, no question mark, Chinese or a
mix. :mod:`loomctx.eval.phrasing` turns each question into those phrasings (templates and
rules, seeded); this asks every phrasing the way ``bench_turn_recall.py`` asks the dataset
wording, on a fresh session per phrasing and budget:

- *question recall*: ``build(message)`` after the phrasing's earlier turns (a follow-up's first
  turn) are added; a question build changes no state;
- *turn recall*: the message is added as the next user turn and the turn is built
  (``build()``). Questions of one conversation accumulate as an agent's turns would.

Gold evidence counts as :func:`loomctx.eval.metric.score_build` counts it (its id reported
included and its whole text in the request; over budget scores 0). The ``dataset`` row is the
wording of the data set, in the same run. Families: LoCoMo (development conversations 1-5 by
default, ``--questions test`` for 6-10), the LongMemEval_S development sample, HotpotQA dev
(padded pools) and the generated multilingual set (dev: its first conversation, every language).
``--split`` chooses the template half: ``dev`` to tune on, ``heldout`` to check a gain carries
over to wording nobody tuned on.

Run: python benchmarks/bench_phrasing.py [--family locomo,longmemeval] [--phrasing request,...]
         [--budgets 4096,16384] [--limit N] [--split dev|heldout] [--questions dev|test]
         [--conversations 1] [--embed-cache PATH] [--json PATH] [--quick]
Data default to the ``shared/data`` folder above the checkout (``--locomo``, ``--longmemeval``,
``--hotpotqa`` or ``LOOMCTX_EVAL_DATA`` override it); a family whose file is missing is skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any, NoReturn

from _replays import context_text
from bench_turn_recall import _session  # the same session as the dataset wording's

HERE = Path(__file__).resolve().parent
MODEL = "cl100k_base"
FAMILIES = ("locomo", "longmemeval", "hotpotqa", "multilingual")
_FILES = {"locomo": "locomo/locomo10.json",
          "longmemeval": "longmemeval/longmemeval_s_dev60.jsonl.gz",
          "hotpotqa": "hotpotqa/hotpotqa_dev_subsampled.jsonl"}
_DATASET = {"locomo": "locomo", "longmemeval": "generic", "hotpotqa": "hotpotqa",
            "multilingual": "multilingual"}


def data_root() -> Path | None:
    """``LOOMCTX_EVAL_DATA``, else the first ``shared/data`` folder beside the checkout or
    one of its parents (the project's data live outside it and are never copied in)."""
    env = os.environ.get("LOOMCTX_EVAL_DATA")
    if env:
        return Path(env)
    for folder in (HERE.parent, *HERE.parent.parents):
        if (folder / "shared" / "data").is_dir():
            return folder / "shared" / "data"
    return None


def groups(family: str, path: Path | None, split: str, conversations: set[int] | None,
           limit: int | None) -> Iterator[tuple[str, list[Any]]]:
    """The family's questions of data split ``split``, in runs that share one history (a
    LoCoMo conversation; one LongMemEval or HotpotQA question), at most ``limit`` in all."""
    from loomctx.eval.datasets import iter_dataset
    from loomctx.eval.splits import SPLIT_KEY, with_splits

    dataset = _DATASET[family]
    # numbered in the file (conversation 6 is LoCoMo's sixth), then kept if in the split
    questions: Iterable[Any] = with_splits(iter_dataset(dataset, path), dataset, "all")
    current: list[Any] = []
    number = 0
    wanted = conversations if family == "locomo" else None
    chosen = (nq for nq in _numbered(questions, wanted) if nq[1].extras[SPLIT_KEY] == split)
    for q in islice(chosen, limit):
        if current and q[1].history is not current[0].history:
            yield f"{family}:{number}", current
            current = []
        number = q[0]
        current.append(q[1])
    if current:
        yield f"{family}:{number}", current


def _numbered(questions: Iterable[Any], wanted: set[int] | None) -> Iterator[tuple[int, Any]]:
    """``(history number from 1 in the file, question)``, the histories in ``wanted`` only."""
    seen: dict[int, int] = {}
    keep: list[Any] = []  # holds the histories so their ids are not reused
    for q in questions:
        if id(q.history) not in seen:
            seen[id(q.history)] = len(seen) + 1
            keep.append(q.history)
        if wanted is None or seen[id(q.history)] in wanted:
            yield seen[id(q.history)], q


def run_group(questions: list[Any], phrasing: str, budget: int, embedder: Any,
              split: str) -> list[dict[str, Any]]:
    """Every question of one history in ``phrasing`` at ``budget``: one row each."""
    from loomctx.eval.metric import score_build
    from loomctx.eval.phrasing import phrase

    history = questions[0].history
    by_id = {t.id: t.content for t in history}
    now = max((t.timestamp for t in history if t.timestamp is not None), default=0.0)
    if questions[0].question_time is not None:
        now = questions[0].question_time
    session = _session(history, embedder)
    rows = []
    for q in questions:
        gold = [(g, by_id[g]) for g in q.gold]
        said = phrase(q.question, phrasing, key=q.id, split=split)
        for earlier in said.context:
            session.add_message_sync("user", earlier, timestamp=now)
        r = session.build_sync(said.message, max_tokens=budget, now=now)
        asked = score_build(context_text(r.payload), set(r.report.included_ids), gold, budget)
        failed = len(r.report.failed_sources)
        session.add_message_sync("user", said.message, timestamp=now)
        t0 = time.perf_counter()
        r = session.build_sync(max_tokens=budget, now=now)
        turn_ms = (time.perf_counter() - t0) * 1000
        turn = score_build(context_text(r.payload), set(r.report.included_ids), gold, budget)
        # a source that failed (a timeout on a loaded machine) is no recall result: counted
        failed += len(r.report.failed_sources)
        rows.append({"id": q.id, "template": said.template, "budget": budget,
                     "phrasing": phrasing, "turn": turn.recall, "question": asked.recall,
                     "over": int(turn.over_budget) + int(asked.over_budget), "failed": failed,
                     "turn_ms": round(turn_ms, 1)})
    return rows


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean recalls per (family, budget, phrasing), with the dataset wording's beside them."""
    cells: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
    for row in rows:
        cells.setdefault((row["family"], row["budget"], row["phrasing"]), []).append(row)
    out = []
    for (family, budget, phrasing), got in cells.items():
        base = cells.get((family, budget, "dataset"), [])
        turn = statistics.fmean(r["turn"] for r in got)
        question = statistics.fmean(r["question"] for r in got)
        ref = statistics.fmean(r["question"] for r in base) if base else None
        out.append({"family": family, "budget": budget, "phrasing": phrasing, "n": len(got),
                    "turn": turn, "question": question, "dataset_question": ref,
                    "dataset_turn": statistics.fmean(r["turn"] for r in base) if base else None,
                    "turn_ok": turn >= question - 0.03,
                    "question_ok": None if ref is None else question >= ref - 0.03,
                    "over_budget": sum(r["over"] for r in got),
                    "sources_failed": sum(r.get("failed", 0) for r in got),
                    "turn_ms_p50": statistics.median(r["turn_ms"] for r in got)})
    return out


def by_template(rows: list[dict[str, Any]]) -> str:
    """Turn and question recall per template (all families and budgets pooled): which wording
    a change helps or hurts."""
    cells: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        cells.setdefault(row["template"], []).append(row)
    lines = ["", f"{'template':<20}{'n':>5}{'turn':>8}{'question':>10}"]
    for name in sorted(cells, key=lambda n: (n.split("/")[0], int(n.split("/")[1]))):
        got = cells[name]
        lines.append(f"{name:<20}{len(got):>5}{statistics.fmean(r['turn'] for r in got):>8.3f}"
                     f"{statistics.fmean(r['question'] for r in got):>10.3f}")
    return "\n".join(lines)


def results_json(doc: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """``doc`` with the per-question results under ``"rows"``: one line per history, phrasing
    and budget, each question as ``[id, template, turn recall, question recall]`` (a results
    file stays small enough to keep in the repository and to diff)."""
    grouped: dict[str, list[list[Any]]] = {}
    for r in rows:
        key = f"{r['history']}|{r['phrasing']}|{r['budget']}"
        grouped.setdefault(key, []).append([r["id"], r["template"], round(r["turn"], 4),
                                            round(r["question"], 4)])
    head = json.dumps(doc, indent=1, ensure_ascii=False)
    lines = [f" {json.dumps(k)}: {json.dumps(v, separators=(',', ':'), ensure_ascii=False)}"
             for k, v in grouped.items()]
    return head[:-2] + ',\n "rows": {\n' + ",\n".join(lines) + "\n }\n}\n"


def phrasing_digest() -> str:
    """A short digest of every template table: two results files with the same digest were
    asked in the same words."""
    import hashlib

    from loomctx.eval import phrasing_templates as t

    tables = [t.REQUEST_LEADS, t.CHATTER, t.EMBEDDED, t.FOLLOW_UPS, t.NO_MARK, t.ZH,
              t.CODE_SWITCHED]
    return hashlib.sha256(json.dumps(tables, ensure_ascii=False).encode()).hexdigest()[:12]


def table(summary: list[dict[str, Any]]) -> str:
    """One block per family and budget: a row per phrasing, the dataset wording first."""
    lines = []
    keys = sorted({(s["family"], s["budget"]) for s in summary})
    for family, budget in keys:
        rows = [s for s in summary if (s["family"], s["budget"]) == (family, budget)]
        rows.sort(key=lambda s: (s["phrasing"] != "dataset", s["phrasing"]))
        lines += ["", f"{family} at {budget} tokens (dataset wording: turn "
                      f"{rows[0]['dataset_turn'] or 0:.3f}, question "
                      f"{rows[0]['dataset_question'] or 0:.3f})",
                  f"{'phrasing':<14}{'n':>5}{'turn':>8}{'question':>10}{'Δturn':>8}"
                  f"{'Δquest':>8}  checks"]
        for s in rows:
            d_turn = s["turn"] - (s["dataset_turn"] or 0)
            d_q = s["question"] - (s["dataset_question"] or 0)
            marks = ("turn≥q-.03 " + ("ok" if s["turn_ok"] else "NO") + "  q≥ds-.03 "
                     + ("ok" if s["question_ok"] else "NO"))
            over = f"  over {s['over_budget']}" if s["over_budget"] else ""
            if s.get("sources_failed"):  # a timeout under load: rerun on a quieter machine
                over += f"  sources failed {s['sources_failed']}"
            lines.append(f"{s['phrasing']:<14}{s['n']:>5}{s['turn']:>8.3f}{s['question']:>10.3f}"
                         f"{d_turn:>+8.3f}{d_q:>+8.3f}  {marks}{over}")
    return "\n".join(lines)


def _usage(message: str) -> NoReturn:
    """A bad option: one line on stderr, exit status 2 (argparse's own usage errors)."""
    print(f"bench_phrasing: {message}", file=sys.stderr)
    raise SystemExit(2)


def _csv(text: str, allowed: tuple[str, ...], flag: str) -> list[str]:
    chosen = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in chosen if x not in allowed]
    if bad or not chosen:
        _usage(f"{flag} {text!r}: choose from {', '.join(allowed)}")
    return chosen


def _ints(text: str, flag: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        values = []
    if not values or any(v <= 0 for v in values):
        _usage(f"{flag} {text!r} must be comma-separated positive "
                         "integers")
    return values


def _templates(path: str) -> dict[str, list[Any]]:
    """``--templates``: the caller's own templates, set in place of the set's."""
    from loomctx.errors import ConfigError
    from loomctx.eval.phrasing import set_templates

    try:
        own = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        _usage(f"--templates {path!r}: {exc}")
    if not isinstance(own, dict) or not own:
        _usage(f"--templates {path!r}: give a JSON object of phrasing -> list of templates")
    try:
        for phrasing, templates in own.items():
            set_templates(phrasing, templates)
    except ConfigError as exc:
        _usage(f"--templates {path!r}: {exc}")
    return own


def _embedder(name: str, cache: str | None) -> Any:
    from loomctx.embed.cache import CachedEmbedder
    from loomctx.embed.default import named_embedder

    store = None
    if cache is not None:
        from loomctx.stores.sqlite import SQLiteStore

        if Path(cache).is_dir():
            _usage(f"--embed-cache {cache!r} is a directory; name a "
                             "SQLite file")
        Path(cache).parent.mkdir(parents=True, exist_ok=True)
        store = SQLiteStore(Path(cache))
    return CachedEmbedder(named_embedder(name), store=store)


def _paths(args: argparse.Namespace, families: list[str]) -> dict[str, Path | None]:
    """Each family's file (None for the generated multilingual set); a family whose default
    file is missing is left out with a note, one named on the command line must exist."""
    root = data_root()
    out: dict[str, Path | None] = {}
    for family in families:
        if family == "multilingual":
            out[family] = None
            continue
        given = getattr(args, family)
        path = Path(given) if given else (root / _FILES[family] if root else None)
        if path is None or not path.is_file():
            if given:
                _usage(f"--{family} {given!r} is not a file")
            print(f"bench_phrasing: {family} skipped: no data file (pass --{family} PATH)",
                  file=sys.stderr)
            continue
        out[family] = path
    return out


def main(argv: list[str] | None = None) -> int:
    from loomctx.eval.phrasing import PHRASINGS, TEMPLATE_SPLITS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", default=None,
                    help=f"comma-separated, of {', '.join(FAMILIES)} (default: all)")
    ap.add_argument("--phrasing", default=",".join(PHRASINGS),
                    help=f"comma-separated, of {', '.join(PHRASINGS)} (default: all; the "
                         "dataset wording is always run, as the reference)")
    ap.add_argument("--budgets", default="4096,16384")
    ap.add_argument("--limit", type=int, default=None, help="questions per family")
    ap.add_argument("--split", choices=TEMPLATE_SPLITS, default="dev",
                    help="which half of the templates (dev: tune on it; heldout: check)")
    ap.add_argument("--questions", choices=("dev", "test"), default="dev",
                    help="data split: LoCoMo conversations 1-5 or 6-10, the first 100 "
                         "questions of a file or the rest (default dev)")
    ap.add_argument("--conversations", default=None,
                    help="LoCoMo conversation numbers, 1-10 (default: every one of the "
                         "--questions split)")
    for family in ("locomo", "longmemeval", "hotpotqa"):
        ap.add_argument(f"--{family}", default=None, metavar="PATH",
                        help=f"the {family} file (default: <shared data>/{_FILES[family]})")
    ap.add_argument("--embedder", default="default", choices=("default", "hashing"),
                    help="hashing: the fast fake, for smoke runs")
    ap.add_argument("--embed-cache", default=None, metavar="PATH",
                    help="a SQLite file keeping every embedding between runs (as `loomctx "
                         "eval --embed-cache`)")
    ap.add_argument("--json", default=None, metavar="PATH",
                    help="where the results go (default results/phrasing_<questions>_<split>"
                         ".json; - prints them)")
    ap.add_argument("--templates", default=None, metavar="PATH",
                    help="a JSON object of phrasing -> list of templates said instead of the "
                         "set's own, in both halves (e.g. templates_lead.json; each fills {q}, "
                         "{bare} or {low}; request: leads, follow_up: [first, second] turns "
                         "filling {subject} and {rest}; templates_requests.json)")
    ap.add_argument("--by-template", action="store_true",
                    help="also print recall per template, every family and budget pooled")
    ap.add_argument("--quick", action="store_true",
                    help="a smoke run: 5 questions of LoCoMo and of the multilingual set (unless "
                         "--family says otherwise) at 4096 tokens, to results/phrasing_quick.json")
    args = ap.parse_args(argv)
    family = args.family or ("locomo,multilingual" if args.quick else ",".join(FAMILIES))
    families = _csv(family, FAMILIES, "--family")
    phrasings = ["dataset", *(p for p in _csv(args.phrasing, PHRASINGS, "--phrasing")
                              if p != "dataset")]
    budgets = _ints("4096" if args.quick else args.budgets, "--budgets")
    limit = 5 if args.quick and args.limit is None else args.limit
    if limit is not None and limit <= 0:
        _usage(f"--limit {limit!r} must be a positive number")
    wanted = set(_ints(args.conversations, "--conversations")) if args.conversations else None
    own = _templates(args.templates) if args.templates else None
    paths = _paths(args, families)
    embedder = _embedder(args.embedder, args.embed_cache)
    # The model loads before the first build, never inside it: a question build that waits
    # seconds for the model to load recalls differently from the same build later in the
    # process, so without this the first question's result would depend on the cache.
    embedder.embed(["the embedding model is loaded before the first build"])
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    for family, path in paths.items():
        for name, questions in groups(family, path, args.questions, wanted, limit):
            for phrasing in phrasings:
                for budget in budgets:
                    got = run_group(questions, phrasing, budget, embedder, args.split)
                    rows += [{"family": family, "history": name, **r} for r in got]
                    print(f"{name} {phrasing:<14} {budget:>6} n={len(got):>3}  turn "
                          f"{statistics.fmean(r['turn'] for r in got):.3f}  question "
                          f"{statistics.fmean(r['question'] for r in got):.3f}  "
                          f"[{time.perf_counter() - started:.0f} s]", file=sys.stderr,
                          flush=True)
    summary = summarize(rows)
    print(f"turn and question recall per phrasing (template split {args.split}, questions "
          f"{args.questions}, {MODEL})" + table(summary)
          + (by_template(rows) if args.by_template else ""))
    doc = {"model": MODEL, "split": args.split, "questions": args.questions,
           "phrasing_set": phrasing_digest(), "families": list(paths), "budgets": budgets,
           "limit": limit, "conversations": sorted(wanted) if wanted else None,
           **({"templates": own} if own else {}), "summary": summary}
    name = "quick" if args.quick else f"{args.questions}_{args.split}"
    out = args.json or str(HERE / "results" / f"phrasing_{name}.json")
    text = results_json(doc, rows)
    if out == "-":
        print(text, end="")
    else:
        Path(out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
