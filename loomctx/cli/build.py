"""``loomctx build``: one context window from files, with the report as a table, JSON or a
self-contained HTML page (``--report html``), on stdout or in ``--report-out PATH``."""

from __future__ import annotations

import argparse
import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from loomctx._jsonl import clean_text, json_lines, loads, read_text
from loomctx.budget.manager import DEFAULT_RESERVE, PHASES, AdaptiveBudgetManager, BudgetManager
from loomctx.builder import BuildOptions, BuildResult, ContextBuilder
from loomctx.errors import ConfigError, InputError
from loomctx.render.registry import formats
from loomctx.report_html import render_build_html
from loomctx.sources.history import HistorySource
from loomctx.sources.knowledge import KnowledgeSource
from loomctx.sources.messages import HistoryState, validate_history
from loomctx.sources.static import SystemPromptSource, UserInputSource
from loomctx.sources.tools import ToolSource
from loomctx.tokens.registry import counter_for_model


def _read_numbered(path: Path) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for n, where, obj in json_lines(path, label="malformed JSON",
                                    hint=": each line must be one JSON message object"):
        if not isinstance(obj, dict):
            raise InputError("each line must be a JSON object like "
                             '{"role": "user", "content": "..."}', where=where)
        obj.setdefault("id", f"m{n}")
        out.append((n, obj))
    return out


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """One JSON object per line; blank lines skipped; errors name file and line."""
    return [obj for _, obj in _read_numbered(path)]


def _read_history(path: Path) -> list[dict[str, Any]]:
    """Messages checked (and repaired) line by line, so an error names the file line (blank
    lines count)."""
    state = HistoryState()
    return [msg for n, obj in _read_numbered(path)
            for msg in validate_history([obj], origin=str(path), start=n - 1, state=state)]


def _read_text(path: Path, what: str) -> str:
    return read_text(path, what)


def _read_tools(path: Path) -> list[dict[str, Any]]:
    data = loads(_read_text(path, "tools"), where=str(path), label="malformed JSON",
                 hint=": the tools file is a JSON list of tool definitions")
    if not isinstance(data, list):
        raise InputError("the tools file must hold a JSON list of tool definitions, got a "
                         f"JSON {type(data).__name__}", where=str(path))
    return data


def example_dir() -> Path:
    return Path(str(resources.files("loomctx") / "example"))


def add_build_parser(sub: Any) -> None:
    p = sub.add_parser("build", help="build one context window and report what went in")
    p.add_argument("--example", action="store_true",
                   help="use the bundled example conversation, tools and knowledge")
    p.add_argument("--history", type=Path, help="conversation, one OpenAI message per line")
    p.add_argument("--system", type=Path, help="file with the system prompt")
    p.add_argument("--tools", type=Path, help="JSON list of tool definitions")
    p.add_argument("--knowledge", type=Path, help="folder of .md/.txt files to retrieve from")
    p.add_argument("--query", help="the current user input (default: the last user message)")
    p.add_argument("--model", default="gpt-4o", help="target model (decides the tokenizer)")
    p.add_argument("--count-as", "--fallback-encoding", dest="fallback_encoding", metavar="NAME",
                   help="how to count tokens for a model loomctx has no tokenizer for: an "
                        "encoding (cl100k_base, o200k_base, llama3, qwen3), or 'estimate' (a "
                        "character estimate that errs high, +10%% margin; the report says the "
                        "counts are estimates)")
    p.add_argument("--max-tokens", type=int, help="hard cap on the rendered input context")
    p.add_argument("--window", type=int, help="context window (with --reserve)")
    p.add_argument("--reserve", type=float, default=None,
                   help=f"output reserve share, with --window (default {DEFAULT_RESERVE})")
    p.add_argument("--format", choices=[f for f in formats() if f != "template"],
                   help="output format (default: the model's provider); openai_strict is "
                        "OpenAI's wire format for local servers whose chat template takes one "
                        "leading system message")
    p.add_argument("--placement", choices=("system", "first_system", "user_block"),
                   help="where the turn's evidence and recall notes go in chat formats "
                        "(default: the format's own)")
    p.add_argument("--text-style", choices=("plain", "seed"), default="plain",
                   help="text formats: seed adds the seed's section labels, [来源: …] source "
                        "tags and default [Output] instruction")
    p.add_argument("--report", choices=("table", "json", "html"), default="table",
                   help="table (with the context), json (context and report) or html (a "
                        "self-contained page: budget bar, items, request, timings)")
    p.add_argument("--report-out", type=Path, metavar="PATH",
                   help="write the output to PATH instead of stdout")
    p.add_argument("--phase", choices=PHASES,
                   help="task phase: shifts the sources' shares (early: knowledge and recall, "
                        "middle: recent messages and tools, late: important memory and the "
                        "agent's output); the report shows each source's allocation")
    p.set_defaults(func=run_build)


def builder_from_args(args: argparse.Namespace,
                      ) -> tuple[ContextBuilder, str | None, dict[str, Any]]:
    if args.example:
        ex = example_dir()
        args.history = args.history or ex / "conversation.jsonl"
        args.system = args.system or ex / "system.txt"
        args.tools = args.tools or ex / "tools.json"
        args.knowledge = args.knowledge or ex / "knowledge"
        if args.max_tokens is None and args.window is None:
            args.max_tokens = 1500
    if args.max_tokens is None and args.window is None:
        raise ConfigError("no budget: pass --max-tokens N or --window N [--reserve R]")
    if args.max_tokens is not None and args.window is not None:
        raise ConfigError("pass either --max-tokens or --window, not both")
    if args.max_tokens is not None and args.reserve is not None:
        raise ConfigError(f"--reserve {args.reserve!r} has no effect with --max-tokens (the "
                          "budget is exactly max_tokens): drop --reserve, or use --window N "
                          "--reserve R")
    _check_model(args)
    _check_window(args)
    history = _read_history(args.history) if args.history else []
    query = args.query
    context: dict[str, Any] = {}
    if query is None and (not history or history[-1].get("role") != "user"):
        raise InputError("no --query and the history does not end with a user message: "
                         "pass --query TEXT", where=str(args.history or "history"))
    if query is not None:
        query = clean_text(query)  # e.g. undecodable argv bytes: the same rule as messages
    # Without --query the build is a turn: its input is the history's last user message,
    # shown once with all its parts (text and images).
    sources: list[Any] = []
    if args.system:
        # a file's trailing newline is not part of the prompt
        sources.append(SystemPromptSource(_read_text(args.system, "system prompt").strip()))
    sources.append(UserInputSource())
    sources.append(HistorySource(history, origin=str(args.history or "history")))
    if args.tools:
        sources.append(ToolSource(_read_tools(args.tools), origin=str(args.tools)))
    if args.knowledge:
        sources.append(KnowledgeSource.from_folder(args.knowledge))
    options = BuildOptions(model=args.model, format=args.format,
                           fallback_encoding=args.fallback_encoding, placement=args.placement,
                           text_style=args.text_style)
    return ContextBuilder(sources, options=options, budget=_budget(args)), query, context


def _budget(args: argparse.Namespace) -> BudgetManager | None:
    """The budget manager: the builder's default, an adaptive one when ``--phase`` is given
    (the default ratios, shifted by the phase), with ``--window`` and ``--reserve`` when given."""
    reserve = DEFAULT_RESERVE if args.reserve is None else args.reserve
    if args.phase is not None:
        window = args.window if args.window is not None else counter_for_model(
            args.model, fallback=args.fallback_encoding).context_window
        return AdaptiveBudgetManager(window=window, reserve=reserve)
    if args.window is not None:
        return BudgetManager(window=args.window, reserve=reserve)
    return None


def _check_model(args: argparse.Namespace) -> None:
    """Refuse a model loomctx cannot count for, naming the flag that fixes it: a guessed
    tokenizer could let the request overflow the budget without a word."""
    if args.fallback_encoding is not None:
        return
    try:
        counter_for_model(args.model)
    except ConfigError:
        raise ConfigError(
            f"unknown model {args.model!r}: loomctx has no tokenizer for it, so no budget can "
            "be kept: pass --count-as with an encoding (cl100k_base, o200k_base, llama3, "
            "qwen3) or 'estimate' (a character estimate that errs high), or --model with a "
            "known family or a tokenizer.json path") from None


def _check_window(args: argparse.Namespace) -> None:
    """Refuse a ``--window`` past the model's known context window (``--max-tokens`` is
    checked by the budget manager)."""
    if args.window is None:
        return
    known = counter_for_model(args.model, fallback=args.fallback_encoding).context_window
    if known is not None and args.window > known:
        raise ConfigError(
            f"--window {args.window} is larger than the context window of {args.model!r} "
            f"({known} tokens): pass --window {known} or less"
        )


def run_build(args: argparse.Namespace) -> int:
    out = getattr(args, "report_out", None)
    if out is not None:
        _check_out(out)
    builder, query, context = builder_from_args(args)
    result = builder.build_sync(query, max_tokens=args.max_tokens, phase=args.phase,
                                context=context)
    if args.report == "json":
        text = json.dumps(result.to_dict(), ensure_ascii=False, indent=1) + "\n"
    elif args.report == "html":
        text = render_build_html(result.report, rendered=result.rendered,
                                 title=f"loomctx build · {args.model}")
    else:
        text = _pretty(result) + "\n\n" + result.report.table() + "\n"
    if out is None:
        sys.stdout.write(text)
        return 0
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"--report-out {str(out)!r} cannot be written "
                          f"({exc.strerror or exc}): pass a writable file path") from None
    print(f"wrote the {args.report} report to {out} ({result.tokens} tokens in the context)")
    return 0


def _check_out(out: Path) -> None:
    """Refuse an output path that cannot be a file before spending time on the build."""
    if out.is_dir():
        raise ConfigError(f"--report-out {str(out)!r} is a directory: pass a file path, e.g. "
                          f"{str(out / 'report.html')!r}")
    if not out.parent.is_dir():
        raise ConfigError(f"--report-out {str(out)!r}: the folder {str(out.parent)!r} does not "
                          "exist: create it or pass another path")


def _pretty(result: BuildResult) -> str:
    if result.text:
        return result.text
    return json.dumps(result.payload, ensure_ascii=False, indent=1)


__all__ = ["add_build_parser", "builder_from_args", "read_jsonl", "run_build"]
