"""Draw the plots of ``benchmarks/README.md`` from the JSON files in ``benchmarks/results/``.

Why: a recall curve against the budget, or the reuse of every request of a replay, is read at a
glance and lost in a table. The plots are made from the committed results only (nothing is run
again), so anyone can check that a plot says what its file says.

    pip install -e '.[bench]'          # matplotlib
    python3 benchmarks/plots.py        # writes benchmarks/plots/*.png

Each data set's loomctx curve comes from the run of the shipped defaults; its baselines
(recency, BM25, dense, fusion) from the last run that measured them, listed in ``RECALL``. The
baselines do not run loomctx's ranking, so a later loomctx run leaves them unchanged.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
PLOTS = HERE / "plots"

RECALL: list[tuple[str, str, str]] = [
    ("LoCoMo, 1,535 questions", "recall_locomo_round12.json", "recall_locomo_round9.json"),
    ("LoCoMo with --metadata", "recall_locomo_metadata_round12.json",
     "recall_locomo_metadata_round9.json"),
    ("HotpotQA, 500 questions", "recall_hotpotqa500_round12.json",
     "recall_hotpotqa500_round9.json"),
    ("Multilingual, hard (en/zh/mixed)", "recall_multilingual_hard_round12.json",
     "recall_multilingual_hard_round9.json"),
]
"""(title, file with loomctx's curve, file with the baselines' curves)."""

SYSTEMS = ("loomctx", "fusion", "bm25", "dense", "recency")
STYLE = {"loomctx": ("C3", "o", 2.4), "fusion": ("C0", "s", 1.2), "bm25": ("C2", "^", 1.2),
         "dense": ("C1", "v", 1.2), "recency": ("0.5", "x", 1.2)}


def _curve(path: Path, system: str) -> tuple[list[int], list[float]]:
    """The whole set's recall by budget for one system of one eval result file."""
    rows = json.loads(path.read_text(encoding="utf-8"))["results"]
    points = sorted((r["budget"], r["recall"]) for r in rows
                    if r["system"] == system and r["category"] == "all")
    return [b for b, _ in points], [v for _, v in points]


def recall_plot(plt: Any, out: Path) -> None:
    """Recall against budget, one panel per data set, loomctx beside every baseline."""
    fig, axes = plt.subplots(2, 2, figsize=(11, 8), sharey=True)
    for ax, (title, ours, peers) in zip(axes.flat, RECALL, strict=True):
        for system in SYSTEMS:
            source = RESULTS / (ours if system == "loomctx" else peers)
            budgets, recall = _curve(source, system)
            if not budgets:
                continue
            color, marker, width = STYLE[system]
            ax.plot(budgets, recall, color=color, marker=marker, linewidth=width, label=system)
        ax.set_xscale("log", base=2)
        ax.set_xticks(budgets)
        ax.set_xticklabels([f"{b:,}" for b in budgets])
        ax.set_title(title)
        ax.set_xlabel("budget (cl100k tokens)")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("evidence recall")
    axes[1][0].set_ylabel("evidence recall")
    axes[0][0].legend(loc="lower right")
    fig.suptitle("Evidence recall at budget: gold turn whole inside a context within the budget")
    fig.tight_layout()
    fig.savefig(out, dpi=90, metadata={"Software": None})
    plt.close(fig)


def cache_plot(plt: Any, out: Path) -> None:
    """Share of each request that repeats the previous one from its start, build by build."""
    data = json.loads((RESULTS / "cache.json").read_text(encoding="utf-8"))
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
    recall_plot(plt, args.out / "recall_vs_budget.png")
    cache_plot(plt, args.out / "cache_reuse_per_turn.png")
    print(f"wrote {args.out / 'recall_vs_budget.png'} and {args.out / 'cache_reuse_per_turn.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
