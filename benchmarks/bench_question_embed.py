"""A new question's build, one setting of the question's embedding against another, paired.

Why: a new question's build costs the default embedder's pass over the question, and the
machine's speed drifts by more than the settings differ (runs of the same code in separate
processes moved by 20 %). So each pair is measured in one process, on one session: every
question is built twice, once under each setting, in alternating order, with a suffix that makes
each text new to the embedding cache. The settings leave the vectors the same (to ~1e-6), so
both builds see the same memory.

The pairs:
- ``engine``: USE on onnxruntime (the default) against the package's numpy pass;
- ``at_once``: USE and MiniLM at the same time, on two threads (the default), against one
  after the other;
- ``two_steps``: at the same time, MiniLM's input work (tokenising, look-ups) done on the
  caller's thread before the two passes start (the default, ``embed_later``), against all of it
  on MiniLM's thread, where it competes with USE's input work for Python's lock;
- ``first_step_here``: the question's cache look-up and both models' input work done by the
  build's own thread before the worker thread starts (the default, ``query_vector_later``),
  against all of it on the worker, where it competes with the lexical lists for the lock.

    python3 benchmarks/bench_question_embed.py --data PATH/locomo10.json [--rounds 2]

It writes ``results/question_embed.json``: per pair and round the p50 of each side and the
median of the per-question differences (ms).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from _locomo import first_conversation  # beside this script

_OUT = Path(__file__).parent / "results" / "question_embed.json"


def _pair(session: Any, questions: list[Any], now: float, budget: int,
          setting: Callable[[bool], None], tag: str) -> dict[str, float]:
    """Build each question under the default (True) and the other setting (False)."""
    times: dict[bool, list[float]] = {True: [], False: []}
    for i, q in enumerate(questions):
        for default in ((True, False) if i % 2 == 0 else (False, True)):
            setting(default)
            start = time.perf_counter()
            session.build_sync(f"{q.question} ({tag} {default})", max_tokens=budget, now=now)
            times[default].append((time.perf_counter() - start) * 1000.0)
    setting(True)
    diffs = [a - b for a, b in zip(times[True], times[False], strict=True)]
    return {"default_p50": round(statistics.median(times[True]), 2),
            "other_p50": round(statistics.median(times[False]), 2),
            "paired_diff_median": round(statistics.median(diffs), 2), "n": len(diffs)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="LoCoMo's locomo10.json")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--budget", type=int, default=512)
    ap.add_argument("--out", type=Path, default=_OUT)
    args = ap.parse_args()
    if not args.data.is_file():
        raise SystemExit(f"--data: no file at {args.data}; pass LoCoMo's locomo10.json")

    from loomctx.embed import JointEmbedder, UniversalSentenceEncoder
    from loomctx.embed._model import ModelEmbedder
    from loomctx.embed.joint import AT_ONCE

    session, questions, now = first_conversation(args.data, budget=args.budget)
    joint = session.embedder.inner
    assert isinstance(joint, JointEmbedder) and isinstance(joint.multilingual,
                                                            UniversalSentenceEncoder)
    use = joint.multilingual
    use.embed(["warm up"])  # both engines loaded before the first timed build
    UniversalSentenceEncoder(use.threads, engine="numpy").embed(["warm up"])

    def engine(default: bool) -> None:
        use.engine = "onnxruntime" if default else "numpy"

    def at_once(default: bool) -> None:
        joint.at_once = AT_ONCE if default else 0

    english = joint.english
    assert isinstance(english, ModelEmbedder)

    def two_steps(default: bool) -> None:
        if default:
            english.__dict__.pop("embed_later", None)
        else:  # the base class's form: every step on the thread
            english.embed_later = partial(ModelEmbedder.embed_later, english)  # type: ignore[method-assign]

    memory = session.memory
    own_first_step = memory.query_vector_later

    def first_step_here(default: bool) -> None:
        if default:
            memory.query_vector_later = own_first_step  # type: ignore[method-assign]
        else:  # every step on the worker thread
            memory.query_vector_later = (  # type: ignore[method-assign]
                lambda text: partial(memory.query_vector, text))

    rounds: list[dict[str, Any]] = []
    for r in range(args.rounds):
        row = {"engine": _pair(session, questions, now, args.budget, engine, f"e{r}"),
               "at_once": _pair(session, questions, now, args.budget, at_once, f"a{r}"),
               "two_steps": _pair(session, questions, now, args.budget, two_steps, f"t{r}"),
               "first_step_here": _pair(session, questions, now, args.budget, first_step_here,
                                        f"f{r}")}
        print(f"round {r + 1}: {row}", flush=True)
        rounds.append(row)
    result = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "platform": platform.platform(), "load_average": os.getloadavg()},
              "budget": args.budget, "questions": len(questions), "rounds": rounds}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
