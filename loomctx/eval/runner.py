"""Run systems over questions at several budgets and aggregate evidence recall and latency.

Questions are consumed as a stream, one at a time, every system and budget on each, so a large
generic JSONL file is never held whole in memory. Latency is the wall time of ``run`` only
(scoring is excluded). A system's optional ``prepare(history)`` (ingesting a conversation) is
called once per new history outside the builds and reported apart, as indexing time.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from itertools import islice
from typing import Any

import numpy as np

from loomctx.errors import ConfigError
from loomctx.eval.baselines import EvalSystem
from loomctx.eval.metric import ENCODING, count_tokens, score_build
from loomctx.eval.records import EvalQuestion, Turn
from loomctx.eval.splits import SPLIT_KEY


@dataclass(frozen=True, slots=True)
class EvalResult:
    """Aggregate of one system at one budget on one category (``"all"`` for every question)."""

    system: str
    budget: int
    category: str
    n: int
    recall: float
    build_ms_p50: float
    build_ms_p95: float
    over_budget: int
    tokens_mean: float
    index_ms_p50: float = 0.0
    index_ms_p95: float = 0.0
    histories: int = 0


@dataclass(frozen=True, slots=True)
class EvalReport:
    """All results of one evaluation run."""

    dataset: str
    results: tuple[EvalResult, ...]
    systems: tuple[str, ...]
    budgets: tuple[int, ...]
    categories: tuple[str, ...] = field(default=("all",))
    """``"all"``, the data set's categories, then ``"split:dev"`` / ``"split:test"`` when the
    questions carry a split (each split's questions aggregated apart)."""
    split: str = "all"
    """Which split was run (``dev``, ``test`` or ``all``)."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON document: ``{"dataset", "split", "encoding", "results": [...]}``."""
        return {
            "dataset": self.dataset,
            "split": self.split,
            "encoding": ENCODING,
            "results": [asdict(result) for result in self.results],
        }

    def to_json(self) -> str:
        """:meth:`to_dict` as one JSON document."""
        return json.dumps(self.to_dict(), indent=2)

    def get(self, system: str, budget: int, category: str = "all") -> EvalResult:
        """The result of ``system`` at ``budget`` on ``category``."""
        for result in self.results:
            if (result.system, result.budget, result.category) == (system, budget, category):
                return result
        raise KeyError((system, budget, category))

    def table(self) -> str:
        """A readable text table: recall per budget and category, then latency per budget."""
        n_all = self.get(self.systems[0], self.budgets[0]).n if self.results else 0
        cat_width = max(len(c) for c in self.categories)
        col = max(9, *(len(s) + 2 for s in self.systems))
        head = f"{'budget':>7}  {'category':<{cat_width}}  {'n':>5}" + "".join(
            f"{s:>{col}}" for s in self.systems
        )
        lines = [
            f"evidence recall: {self.dataset} ({n_all} questions, {ENCODING}, split {self.split})",
            head,
        ]
        for budget in self.budgets:
            for category in self.categories:
                rows = [self.get(s, budget, category) for s in self.systems]
                cells = "".join(
                    f"{r.recall:>{col}.3f}"
                    if not r.over_budget
                    else f"{f'{r.recall:.3f}!{r.over_budget}':>{col}}"
                    for r in rows
                )
                lines.append(f"{budget:>7}  {category:<{cat_width}}  {rows[0].n:>5}{cells}")
        lines += ["", "build latency, ms (p50 / p95)"]
        lat_col = max(22, col)
        lines.append(f"{'budget':>7}" + "".join(f"{s:>{lat_col}}" for s in self.systems))
        for budget in self.budgets:
            cells = ""
            for system in self.systems:
                r = self.get(system, budget)
                cells += f"{f'{r.build_ms_p50:.2f} / {r.build_ms_p95:.2f}':>{lat_col}}"
            lines.append(f"{budget:>7}{cells}")
        indexed = [self.get(s, self.budgets[0]) for s in self.systems]
        if any(r.histories for r in indexed):
            lines += ["", "history indexing (prepare), ms (p50 / p95); - = no prepare step"]
            spans = [
                f"{r.index_ms_p50:.2f} / {r.index_ms_p95:.2f}" if r.histories else "-"
                for r in indexed
            ]
            cells = "".join(f"{span:>{lat_col}}" for span in spans)
            histories = max(r.histories for r in indexed)
            lines.append(f"{'':>7}{cells}  ({histories} histories)")
        if any(r.over_budget for r in self.results):
            lines += ["", "!k: k builds were over budget (scored 0)"]
        return "\n".join(lines)


def _percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else 0.0


def evaluate(
    questions: Iterable[EvalQuestion],
    systems: Sequence[EvalSystem],
    budgets: Sequence[int],
    *,
    dataset: str = "custom",
    limit: int | None = None,
    progress: Callable[[int], None] | None = None,
    split: str = "all",
) -> EvalReport:
    """Run every system at every budget on each question and aggregate per category.

    ``limit`` keeps only the first ``limit`` questions; ``progress(done)`` is called after each.
    Questions tagged with a split (``extras["split"]``, see :mod:`loomctx.eval.splits`) are also
    aggregated per split, as the categories ``split:<name>``; ``split`` names the run's split.
    """
    if not systems:
        raise ConfigError("evaluate needs at least one system")
    if not budgets or any(not isinstance(b, int) or b <= 0 for b in budgets):
        raise ConfigError(f"budgets must be positive integers, got {list(budgets)!r}")
    if limit is not None and limit <= 0:
        raise ConfigError(f"limit must be positive, got {limit!r}")
    budgets = tuple(dict.fromkeys(budgets))
    names = tuple(system.name for system in systems)
    if len(set(names)) != len(names):
        raise ConfigError(f"system names must be unique, got {list(names)!r}")
    recalls: dict[tuple[str, int, str], list[float]] = defaultdict(list)
    times: dict[tuple[str, int, str], list[float]] = defaultdict(list)
    tokens: dict[tuple[str, int, str], list[int]] = defaultdict(list)
    over: dict[tuple[str, int, str], int] = defaultdict(int)
    categories: dict[str, None] = {}
    splits: dict[str, None] = {}
    index_ms: dict[str, list[float]] = {name: [] for name in names}
    count_tokens("")  # load the tokenizer before anything is timed
    current: tuple[Turn, ...] | None = None
    texts: dict[str, str] = {}
    done = 0
    for q in islice(questions, limit):
        if current is not q.history:
            current, texts = q.history, {turn.id: turn.content for turn in q.history}
            for system in systems:
                prepare = getattr(system, "prepare", None)
                if prepare is not None:
                    start = time.perf_counter()
                    prepare(q.history)
                    index_ms[system.name].append((time.perf_counter() - start) * 1000.0)
        gold = [(gold_id, texts[gold_id]) for gold_id in q.gold]
        cats: tuple[str, ...] = ("all",) if q.category is None else ("all", q.category)
        if q.category is not None:
            categories.setdefault(q.category)
        tag = q.extras.get(SPLIT_KEY)
        if isinstance(tag, str):
            splits.setdefault(f"split:{tag}")
            cats = (*cats, f"split:{tag}")
        for system in systems:
            for budget in budgets:
                start = time.perf_counter()
                output = system.run(q, budget)
                elapsed_ms = (time.perf_counter() - start) * 1000.0
                score = score_build(output.context, output.included_ids, gold, budget)
                for cat in cats:
                    key = (system.name, budget, cat)
                    recalls[key].append(score.recall)
                    times[key].append(elapsed_ms)
                    tokens[key].append(score.tokens)
                    over[key] += score.over_budget
        done += 1
        if progress is not None:
            progress(done)
    ordered = ("all", *sorted(categories), *sorted(splits))
    results = tuple(
        EvalResult(
            system=name,
            budget=budget,
            category=cat,
            n=len(recalls[(name, budget, cat)]),
            recall=float(np.mean(recalls[(name, budget, cat)])) if done else 0.0,
            build_ms_p50=_percentile(times[(name, budget, cat)], 50),
            build_ms_p95=_percentile(times[(name, budget, cat)], 95),
            over_budget=over[(name, budget, cat)],
            tokens_mean=float(np.mean(tokens[(name, budget, cat)])) if done else 0.0,
            index_ms_p50=_percentile(index_ms[name], 50),
            index_ms_p95=_percentile(index_ms[name], 95),
            histories=len(index_ms[name]),
        )
        for budget in budgets
        for name in names
        for cat in ordered
    )
    return EvalReport(
        dataset=dataset, results=results, systems=names, budgets=budgets, categories=ordered,
        split=split,
    )


__all__ = ["EvalReport", "EvalResult", "evaluate"]
