"""``loomctx eval``: evidence recall at budget on LoCoMo, HotpotQA or a generic JSONL file.

Kept as its own subcommand module so the main CLI only has to call :func:`add_eval_parser`. Caller
mistakes (a missing file, a bad budget list, a malformed record) end with one line on stderr and
exit code 2; the data is always read from the path given, never bundled.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from loomctx.embed.default import EMBEDDER_NAMES
from loomctx.errors import ConfigError, LoomctxError

if TYPE_CHECKING:
    from loomctx.embed.protocol import Embedder

DEFAULT_BUDGETS = "512,1024,2048,4096,8192"
_DATASETS = ("locomo", "hotpotqa", "generic", "multilingual")
_EXIT_USAGE = 2


def _budgets(text: str) -> tuple[int, ...]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    try:
        values = tuple(int(p) for p in parts)
    except ValueError:
        values = ()
    if not values or any(v <= 0 for v in values):
        raise ConfigError(
            f"--budgets {text!r} must be positive integers separated by commas, "
            f"e.g. {DEFAULT_BUDGETS}"
        )
    return values


def add_eval_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    """Register the ``eval`` subcommand (its handler is ``args.func = run_eval``)."""
    from loomctx.eval.splits import SPLITS  # small, but only for `loomctx eval`
    parser = subparsers.add_parser(
        "eval",
        help="evidence recall at token budgets on a data set",
        description="Evidence recall at budget: for each question the whole history is given, the "
        "context is built for the question at each budget, and recall is the share of gold "
        "evidence whose full text is inside a context of at most that many cl100k tokens.",
    )
    parser.add_argument("dataset", choices=_DATASETS, help="data set format")
    parser.add_argument(
        "--data",
        metavar="PATH",
        help="the data file to read (every data set but multilingual, which is generated)",
    )
    parser.add_argument(
        "--budgets",
        default=DEFAULT_BUDGETS,
        help=f"comma-separated token budgets (default {DEFAULT_BUDGETS})",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--limit", type=int, metavar="N", help="only the first N questions")
    parser.add_argument(
        "--systems",
        metavar="NAMES",
        help="comma-separated systems (default: every registered system)",
    )
    parser.add_argument(
        "--embedder",
        choices=EMBEDDER_NAMES,
        default="default",
        help="embedder of every system that uses one: the default (USE joined by MiniLM on "
        "English), USE alone, MiniLM alone, or the fast hashing fake",
    )
    parser.add_argument(
        "--embed-cache",
        metavar="PATH",
        help="a SQLite file that keeps every embedding across runs (created when missing): a "
        "second run over the same data embeds only the questions it has not seen",
    )
    parser.add_argument(
        "--pad-tokens",
        type=int,
        default=16000,
        metavar="N",
        help="hotpotqa: pad each passage pool to N tokens (default 16000)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="hotpotqa: padding seed; multilingual: generation seed (default 0)",
    )
    parser.add_argument(
        "--distractors",
        type=int,
        default=0,
        metavar="N",
        help="multilingual: N near misses per planted fact (the same key told of someone "
        "else, with another value; default 0)",
    )
    parser.add_argument(
        "--turns",
        type=int,
        default=None,
        metavar="N",
        help="multilingual: turns per generated conversation (default 300; more room for "
        "--distractors)",
    )
    parser.add_argument(
        "--split",
        choices=SPLITS,
        default="all",
        help="dev: the development split (LoCoMo conversations 1-5, the first 100 questions "
        "of other data); test: the held-out rest; all: both, also reported per split",
    )
    parser.add_argument(
        "--metadata",
        action="store_true",
        help="present every turn as '[id] (timestamp) speaker: text', the metadata real "
        "messages carry (gold evidence is then the decorated line)",
    )
    parser.add_argument(
        "--progress", action="store_true", help="report progress on stderr every 100 questions"
    )
    parser.set_defaults(func=run_eval)
    return parser


def _embedder(choice: str, cache: str | None) -> Embedder | None:
    """The embedder ``--embedder`` names (None: each system's default), memoised in the SQLite
    file ``--embed-cache`` names when given (vectors are keyed by model name and text)."""
    from loomctx.embed.default import named_embedder

    if cache is None:
        return None if choice == "default" else named_embedder(choice)
    from loomctx.embed.cache import CachedEmbedder
    from loomctx.stores.sqlite import SQLiteStore

    path = Path(cache)
    if path.exists() and not path.is_file():
        raise ConfigError(f"--embed-cache {cache!r} is not a file; name a SQLite file to use")
    return CachedEmbedder(named_embedder(choice), store=SQLiteStore(path))


def _run(args: argparse.Namespace) -> int:
    from loomctx.eval.datasets import iter_dataset
    from loomctx.eval.runner import evaluate
    from loomctx.eval.splits import with_metadata, with_splits
    from loomctx.eval.systems import build_systems

    budgets = _budgets(args.budgets)
    if args.limit is not None and args.limit <= 0:
        raise ConfigError(f"--limit {args.limit!r} must be a positive number of questions")
    if args.distractors < 0:
        raise ConfigError(f"--distractors {args.distractors!r} must be >= 0")
    if args.pad_tokens < 0:
        raise ConfigError(f"--pad-tokens {args.pad_tokens!r} must be >= 0 (0: no padding)")
    path: Path | None = None
    if args.dataset != "multilingual":
        if args.data is None:
            raise ConfigError(f"{args.dataset} is read from a file: pass --data PATH")
        path = Path(args.data)
        if not path.is_file():
            raise ConfigError(f"--data {str(path)!r} is not a readable file")
    names = None
    if args.systems is not None:
        names = [n.strip() for n in args.systems.split(",") if n.strip()]
    embedder = _embedder(args.embedder, args.embed_cache)
    systems = build_systems(names, embedder=embedder)
    options: dict[str, int] = {}
    if args.dataset == "hotpotqa":
        options = {"pad_tokens": args.pad_tokens, "seed": args.seed}
    elif args.dataset == "multilingual":
        options = {"seed": args.seed, "distractors": args.distractors}
        if args.turns is not None:
            options["turns"] = args.turns
    for flag, value in (("--distractors", args.distractors), ("--turns", args.turns)):
        if value and args.dataset != "multilingual":
            raise ConfigError(f"{flag} applies to the multilingual data set only")
    if args.turns is not None and args.turns < 1:
        raise ConfigError(f"--turns {args.turns!r} must be a positive number of turns")
    questions = with_splits(iter_dataset(args.dataset, path, **options), args.dataset, args.split)
    if args.metadata:
        questions = with_metadata(questions)

    def progress(done: int) -> None:
        if done % 100 == 0:
            print(f"loomctx eval: {done} questions", file=sys.stderr, flush=True)

    report = evaluate(
        questions,
        systems,
        budgets,
        dataset=args.dataset,
        limit=args.limit,
        progress=progress if args.progress else None,
        split=args.split,
    )
    print(report.to_json() if args.json else report.table())
    return 0


def run_eval(args: argparse.Namespace) -> int:
    """Run ``loomctx eval`` with parsed ``args``; 0 on success, 2 on a caller mistake."""
    try:
        return _run(args)
    except (LoomctxError, OSError, ImportError) as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"loomctx eval: error: {message}", file=sys.stderr)
        return _EXIT_USAGE


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry (``python -m loomctx.cli.eval locomo --data ...``)."""
    parser = argparse.ArgumentParser(prog="loomctx")
    add_eval_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["eval", *(argv if argv is not None else sys.argv[1:])])
    return int(args.func(args))


__all__ = ["DEFAULT_BUDGETS", "add_eval_parser", "main", "run_eval"]


if __name__ == "__main__":
    raise SystemExit(main())
