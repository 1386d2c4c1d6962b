"""Draw the plots of ``benchmarks/README.md`` from the JSON files in ``benchmarks/results/``.

Why: a recall curve against the budget, or the reuse of every request of a replay, is read at a
glance and lost in a table. The plots are made from the committed results only (nothing is run
again), so anyone can check that a plot says what its file says.

    pip install -e '.[bench]'          # matplotlib
    python3 benchmarks/plots.py        # writes benchmarks/plots/*.png

Each data set's loomctx curve comes from the last run of the shipped defaults (``CURRENT``, its
development and held-out runs pooled); its baselines (recency, BM25, dense, fusion) from the last
run that measured them, listed in ``RECALL``. The baselines run none of loomctx's ranking, so a
later loomctx run leaves them unchanged (LongMemEval's three systems ran in one run).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
PLOTS = HERE / "plots"

CURRENT = "recall_voice_period_check.json"
"""loomctx's curves: the current defaults, each data set's development and held-out runs."""

RECALL: list[tuple[str, str, str, str]] = [
    ("LoCoMo, 1,535 questions", "locomo", "all", "recall_locomo_round9.json"),
    ("HotpotQA, 500 questions", "hotpotqa", "all", "recall_hotpotqa500_round9.json"),
    ("LongMemEval_S, 60 development questions", "", "all", "recall_longmemeval_dev60.json"),
    ("Multilingual, hard form: Chinese", "multilingual", "zh",
     "recall_multilingual_hard_round9.json"),
]
"""(title, key of the data set in ``CURRENT`` ("" when loomctx is in the peers' own file),
category, file with the peers' curves)."""

SYSTEMS = ("loomctx", "fusion", "bm25", "dense", "recency")
STYLE = {"loomctx": ("C3", "o", 2.4), "fusion": ("C0", "s", 1.2), "bm25": ("C2", "^", 1.2),
         "dense": ("C1", "v", 1.2), "recency": ("0.5", "x", 1.2)}


def _load(name: str) -> Any:
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


def _points(rows: list[dict[str, Any]], system: str, category: str) -> dict[int, tuple[float, int]]:
    """Recall and question count by budget for one system and category of eval result rows."""
    return {r["budget"]: (r["recall"], r["n"]) for r in rows
            if r["system"] == system and r["category"] == category}


def current_curve(key: str, category: str) -> tuple[list[int], list[float]]:
    """loomctx's whole-set recall by budget: the development and held-out runs pooled by their
    question counts (the multilingual check ran whole, in one run)."""
    runs = _load(CURRENT)["runs"]
    if key == "multilingual":
        parts = [runs["multilingual_after"]["hard_16_distractors"]]
    else:
        parts = [runs[f"{key}_dev"]["after"], runs[f"{key}_test"]["after"]]
    pooled: dict[int, list[float]] = {}
    for rows in parts:
        for budget, (recall, n) in _points(rows, "loomctx", category).items():
            hits_n = pooled.setdefault(budget, [0.0, 0.0])
            hits_n[0] += recall * n
            hits_n[1] += n
    budgets = sorted(pooled)
    return budgets, [pooled[b][0] / pooled[b][1] for b in budgets]


def _curve(rows: list[dict[str, Any]], system: str, category: str) -> tuple[list[int], list[float]]:
    points = _points(rows, system, category)
    budgets = sorted(points)
    return budgets, [points[b][0] for b in budgets]


def recall_plot(plt: Any, out: Path) -> None:
    """Recall against budget, one panel per data set, loomctx beside every baseline."""
    fig, axes = plt.subplots(2, 2, figsize=(11, 8), sharey=True)
    for ax, (title, key, category, peers) in zip(axes.flat, RECALL, strict=True):
        peer_rows = _load(peers)["results"]
        ticks: set[int] = set()
        for system in SYSTEMS:
            if system == "loomctx" and key:
                budgets, recall = current_curve(key, category)
            else:
                budgets, recall = _curve(peer_rows, system, category)
            if not budgets:
                continue
            ticks.update(budgets)
            color, marker, width = STYLE[system]
            ax.plot(budgets, recall, color=color, marker=marker, linewidth=width, label=system)
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(ticks))
        ax.set_xticklabels([f"{b // 1024}k" if b >= 1024 else str(b) for b in sorted(ticks)])
        ax.set_title(title)
        ax.set_xlabel("budget (cl100k tokens)")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    axes[0][0].set_ylabel("evidence recall")
    axes[1][0].set_ylabel("evidence recall")
    fig.suptitle("Evidence recall at budget: gold turn whole inside a context within the budget")
    fig.tight_layout()
    fig.savefig(out, dpi=80, metadata={"Software": None})
    plt.close(fig)


def build_plot(plt: Any, out: Path) -> None:
    """Warm build time against the history's length, loomctx beside LangChain's trim_messages:
    loomctx's cost follows what fits the window, the peer's the whole history."""
    data = _load("build.json")
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for system, color, label in (("loomctx", "C3", "loomctx"),
                                 ("langchain", "C0", "LangChain trim_messages + BM25")):
        rows = sorted((r for r in data["results"] if r["system"] == system),
                      key=lambda r: r["messages"])
        sizes = [r["messages"] for r in rows]
        warm = [r["windows"]["8000"]["warm"] for r in rows]
        med = [w["median_ms"] for w in warm]
        low = [m - w["min_ms"] for m, w in zip(med, warm, strict=True)]
        high = [w["p95_ms"] - m for m, w in zip(med, warm, strict=True)]
        ax.errorbar(sizes, med, yerr=[low, high], color=color, marker="o", capsize=3, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks([1000, 10000, 100000])
    ax.set_xticklabels(["1k", "10k", "100k"])
    ax.set_xlabel("messages in the history")
    ax.set_ylabel("warm build, ms (median; bar: min to p95)")
    ax.set_title("Build into an 8k window after one new message (bench_build.py)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(out, dpi=80, metadata={"Software": None})
    plt.close(fig)


def cache_plot(plt: Any, out: Path) -> None:
    """Share of each request that repeats the previous one from its start, build by build."""
    data = _load("cache.json")
    runs = {(r["replay"], r["budget"], r["system"]): r for r in data["runs"]}
    panels = [(replay["name"], budget) for replay in data["replays"] for budget in (4000, 16000)]
    fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharey=True)
    for ax, (replay, budget) in zip(axes.flat, panels, strict=True):
        for system, color in (("naive", "0.6"), ("loomctx", "C3")):
            run = runs.get((replay, budget, system))
            if run is None:
                continue
            shares = [reused / total if total else 0.0 for reused, total in run["per_build"]][1:]
            ax.plot(range(2, len(shares) + 2), shares, color=color, linewidth=1.2,
                    label=f"{system} (mean {run['mean_reuse']:.2f})")
        ax.set_title(f"{replay}, budget {budget:,}")
        ax.set_xlabel("request (build) number")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right")
    axes[0][0].set_ylabel("prefix reused from the previous request")
    axes[1][0].set_ylabel("prefix reused from the previous request")
    fig.suptitle(f"Prompt-cache reuse per request ({data['model']}, bench_cache.py)")
    fig.tight_layout()
    fig.savefig(out, dpi=90, metadata={"Software": None})
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=PLOTS, help="folder for the PNG files")
    args = parser.parse_args(argv)
    try:
        import matplotlib
    except ImportError:
        parser.exit(2, "plots.py: matplotlib is missing; install it with "
                       "`pip install -e '.[bench]'`\n")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    args.out.mkdir(parents=True, exist_ok=True)
    for name, draw in (("recall_vs_budget.png", recall_plot),
                       ("cache_reuse_per_turn.png", cache_plot),
                       ("build_vs_history.png", build_plot)):
        draw(plt, args.out / name)
        print(f"wrote {args.out / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
