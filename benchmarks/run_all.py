"""Run every ``benchmarks/bench_*.py`` in turn with quick settings and collect their JSON results.

Why: ``make bench`` should give one command that refreshes all the numbers the README quotes,
in minutes, without knowing each script's options. A script that offers ``--quick`` gets it;
a few known scripts get small explicit sizes; any other runs with its own defaults (``--full``
runs every script with its own defaults). Each script writes ``benchmarks/results/<name>.json``;
this runner writes ``benchmarks/results/summary.json`` with every script's exit code, wall time
and the JSON files it wrote or updated.

    python3 benchmarks/run_all.py [--full] [--only build,store] [--timeout 900] [--locomo PATH]

Scripts that read LoCoMo (``--data``, required) run only when ``--locomo`` gives its
``locomo10.json``; without it they are listed as skipped, not failed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"

_QUICK_ARGS: dict[str, list[str]] = {
    "bench_aggregate.py": ["--per-session", "3", "--budgets", "1000", "--embedder", "hashing",
                           "--json", str(RESULTS / "aggregate-quick.json")],
    "bench_store.py": ["--records", "20000"],
    "bench_tokens.py": ["--mb", "2", "--reps", "3"],
    "bench_pg_writes.py": ["--rounds", "2", "--n", "300", "--json",
                           str(RESULTS / "pg_writes-quick.json")],
}
"""Small settings for scripts that have no ``--quick`` flag."""

_LOCOMO_QUICK: dict[str, list[str]] = {
    "bench_latency.py": ["--rounds", "1", "--conversations", "1"],
    "bench_question_embed.py": ["--rounds", "1"],
    "bench_recall_steps.py": ["--rounds", "1", "--budgets", "512"],
}
"""Small settings for the scripts that need LoCoMo (``--data``)."""


def _scripts(only: set[str] | None) -> list[Path]:
    found = sorted(HERE.glob("bench_*.py"))
    if only is None:
        return found
    return [p for p in found if p.stem.removeprefix("bench_") in only]


def _quick_args(script: Path, env: dict[str, str]) -> list[str]:
    """``--quick`` when the script's ``--help`` lists it, else the known small settings."""
    helped = subprocess.run([sys.executable, str(script), "--help"], capture_output=True,
                            text=True, env=env, check=False, timeout=120)
    if "--quick" in helped.stdout:
        return ["--quick"]
    return list(_QUICK_ARGS.get(script.name, []))


def _snapshot() -> dict[str, float]:
    return {p.name: p.stat().st_mtime for p in RESULTS.glob("*.json") if p.name != "summary.json"}


def _env() -> dict[str, str]:
    root = str(HERE.parent)
    old = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root if not old else f"{root}{os.pathsep}{old}"}


def _needs_data(script: Path, env: dict[str, str]) -> bool:
    """Whether the script cannot run without ``--data`` (its usage line requires it)."""
    helped = subprocess.run([sys.executable, str(script), "--help"], capture_output=True,
                            text=True, env=env, check=False, timeout=120)
    usage = helped.stdout.split("\n\n", 1)[0]
    return "--data" in usage and "[--data" not in usage


def run(script: Path, *, full: bool, timeout: float,
        locomo: Path | None = None) -> dict[str, Any]:
    """Run one script; return its exit code, seconds, arguments and the JSON it wrote."""
    env = _env()
    args = [] if full else _quick_args(script, env)
    if _needs_data(script, env):
        if locomo is None:
            print(f"== {script.name} skipped: it needs --locomo PATH/locomo10.json", flush=True)
            return {"script": script.name, "args": [], "exit_code": "skipped (needs --locomo)",
                    "seconds": 0.0, "outputs": {}}
        args = ["--data", str(locomo), *([] if full else _LOCOMO_QUICK.get(script.name, []))]
    before = _snapshot()
    print(f"== {script.name} {' '.join(args)}", flush=True)
    start = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, str(script), *args], cwd=HERE.parent, env=env,
                              check=False, timeout=timeout)
        code: int | str = proc.returncode
    except subprocess.TimeoutExpired:
        code = f"timed out after {timeout:.0f}s"
    seconds = round(time.perf_counter() - start, 1)
    after = _snapshot()
    written = sorted(name for name, mtime in after.items() if before.get(name) != mtime)
    outputs: dict[str, Any] = {}
    for name in written:
        try:
            outputs[name] = json.loads((RESULTS / name).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            outputs[name] = {"error": f"cannot read {name}: {exc}"}
    return {"script": script.name, "args": args, "exit_code": code, "seconds": seconds,
            "outputs": outputs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--full", action="store_true",
                        help="run every script with its own (full-size) defaults")
    parser.add_argument("--only", default="",
                        help="comma-separated subset, e.g. build,store (names after bench_)")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds one script may run before it is stopped")
    parser.add_argument("--locomo", type=Path, default=None,
                        help="LoCoMo's locomo10.json, for the scripts that read it")
    args = parser.parse_args(argv)
    if args.locomo is not None and not args.locomo.is_file():
        parser.error(f"--locomo: no file at {args.locomo}; pass LoCoMo's locomo10.json")
    only = {s for s in args.only.split(",") if s} or None
    scripts = _scripts(only)
    if not scripts:
        parser.error(f"no benchmarks/bench_*.py matched {args.only!r}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    runs = [run(s, full=args.full, timeout=args.timeout, locomo=args.locomo) for s in scripts]
    summary = {"mode": "full" if args.full else "quick", "runs": runs}
    out = RESULTS / "summary.json"
    out.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print()
    for r in runs:
        files = ", ".join(r["outputs"]) or "no JSON written"
        print(f"{r['script']:<20} exit {r['exit_code']!s:<24} {r['seconds']:>7.1f} s  {files}")
    print(f"wrote {out}")
    return 0 if all(r["exit_code"] == 0 or str(r["exit_code"]).startswith("skipped")
                    for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
