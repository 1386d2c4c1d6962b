"""Three steps of a question's build against the forms they replaced, paired, in one process.

Why: after the question's embedding, a build spent ~3 ms copying and ranking the whole store
for the dense list, ~2 ms in MMR's rescans and ~0.7 ms hashing the same candidates' texts again.
The eleventh round replaced each with a form that gives the same result. This benchmark keeps
the replaced forms (``_old_*`` below: the code as it was) and times each step both ways on the
inputs of real builds, then whole builds with all three old forms patched in against none, each
question built both ways in alternating order.

- ``vector_search``: ``InMemoryStore.search_vector`` (only the records that can make the top
  are checked against the scope and copied, with a copier for JSON data) against a full scan
  whose hits are deep-copied; the questions' vectors of LoCoMo conversation 1, at the limit a
  build asks (32 at 512 tokens, 128 at 2,048).
- ``mmr``: ``mmr_order`` (bit masks, lazily updated keys in a heap) against the loop that
  rescans every candidate at every step; the candidates of each build.
- ``fingerprint``: the memoised content fingerprint against SHA-1 every time; the candidates'
  texts of each build, ~270 look-ups a build.
- ``build``: whole builds, question cached (the embedding left out) and new.

    python3 benchmarks/bench_recall_steps.py --data PATH/locomo10.json [--rounds 2]

It writes ``results/recall_steps.json``: per step, budget and round the median time of each
form and the median of the paired differences (ms). Each step also checks that both forms give
the same result on every input, and stops if they do not.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import platform
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _locomo import first_conversation  # beside this script

_OUT = Path(__file__).parent / "results" / "recall_steps.json"


# -- the forms this round replaced, as they were -------------------------------------------------

def _old_search_vector(store: Any, vector: Any, *, scope: Any, limit: int = 20,
                       level: Any = None) -> list[Any]:
    from loomctx.stores import _records as rec
    from loomctx.stores.memory import _matches
    from loomctx.stores.protocol import Hit

    if store._matrix is None:
        store.search_vector(vector, scope=scope, limit=1)  # builds the cached matrix
    with store._lock:
        query = rec.query_vector(vector, store._dim())
        keys, matrix = store._matrix
        scores = (matrix @ query).tolist()
        records = store._records
        passing = ((records[k], s) for k, s in zip(keys, scores, strict=True)
                   if _matches(records[k], scope, level))
        return [Hit(copy.deepcopy(h.record), h.score) for h in rec.top(passing, limit)]


def _old_greedy(rel: list[float], sets: list[frozenset[str]], weight: float) -> list[int]:
    """MMR's steps as they were: every step rescans every candidate left."""
    max_sim = [0.0] * len(rel)
    left = list(range(len(rel)))
    order: list[int] = []
    while left:
        best = max(left, key=lambda i: (rel[i] - weight * max_sim[i], -i))
        left.remove(best)
        order.append(best)
        b = sets[best]
        if not b:
            continue
        for i in left:
            a = sets[i]
            if a:
                inter = len(a & b)
                if inter:
                    sim = inter / (len(a) + len(b) - inter)
                    if sim > max_sim[i]:
                        max_sim[i] = sim
    return order


def _old_mmr_order(items: Sequence[Any], lam: float, terms: dict[str, frozenset[str]]
                   ) -> list[Any]:
    """``mmr_order`` with its steps as they were (the ranking and the head are unchanged)."""
    import loomctx.select.scoring as scoring

    shipped, scoring._greedy = scoring._greedy, _old_greedy
    try:
        return scoring.mmr_order(items, lam, terms)
    finally:
        scoring._greedy = shipped


def _old_fingerprint(text: str) -> str:
    folded = " ".join(text.split())
    return hashlib.sha1(folded.encode("utf-8", "surrogatepass")).hexdigest()


@contextmanager
def _old_forms() -> Iterator[None]:
    """Builds inside this block run the three replaced forms."""
    import loomctx.items as items
    import loomctx.retrieval.reranker as reranker
    import loomctx.select.scoring as scoring
    from loomctx.stores.memory import InMemoryStore

    saved = (InMemoryStore.search_vector, scoring._greedy, items.fingerprint,
             reranker.fingerprint)
    InMemoryStore.search_vector = _old_search_vector  # type: ignore[method-assign]
    scoring._greedy = _old_greedy
    items.fingerprint = reranker.fingerprint = _old_fingerprint
    try:
        yield
    finally:
        (InMemoryStore.search_vector, scoring._greedy, items.fingerprint,
         reranker.fingerprint) = saved


# -- measuring ------------------------------------------------------------------------------------

def _paired(cases: list[Any], new: Callable[[Any], Any], old: Callable[[Any], Any],
            same: Callable[[Any, Any], bool], repeat: int = 5) -> dict[str, float]:
    """Each case timed both ways (best of ``repeat``), in alternating order."""
    times: dict[str, list[float]] = {"new": [], "old": []}
    for i, case in enumerate(cases):
        if not same(new(case), old(case)):
            raise SystemExit(f"the two forms differ on case {i}: not the same step")
        for form in (("new", "old") if i % 2 == 0 else ("old", "new")):
            f = new if form == "new" else old
            best = float("inf")
            for _ in range(repeat):
                start = time.perf_counter()
                f(case)
                best = min(best, time.perf_counter() - start)
            times[form].append(best * 1000.0)
    return _summary(times)


def _summary(times: dict[str, list[float]]) -> dict[str, float]:
    diffs = [a - b for a, b in zip(times["new"], times["old"], strict=True)]
    return {"new_p50": round(statistics.median(times["new"]), 3),
            "old_p50": round(statistics.median(times["old"]), 3),
            "paired_diff_median": round(statistics.median(diffs), 3), "n": len(diffs)}


def _budget(session: Any, questions: list[Any], now: float, budget: int, r: int
            ) -> dict[str, Any]:
    """Every step at one budget: the inputs captured from real builds, then timed both ways."""
    import loomctx.select.rank as rank
    from loomctx.items import fingerprint
    from loomctx.retrieval.source import MAX_RECALL

    memory, store = session.memory, session.memory.store
    captured: list[tuple[Any, ...]] = []
    shipped = rank.mmr_order

    def capture(items: Any, lam: float, terms: Any) -> Any:
        captured.append((list(items), lam, terms))
        return shipped(items, lam, terms)

    rank.mmr_order = capture
    try:
        for q in questions:  # also caches every question's vector
            session.build_sync(q.question, max_tokens=budget, now=now)
    finally:
        rank.mmr_order = shipped
    limit = max(20, min(MAX_RECALL, budget // 16))  # what the build asks at this budget
    vectors = [memory.query_vector(q.question) for q in questions]

    def ids(hits: list[Any]) -> list[tuple[str, float]]:
        return [(h.record.id, h.score) for h in hits]

    texts = [[it.content for it in case[0]] for case in captured]
    out: dict[str, Any] = {
        "vector_search": _paired(
            vectors, lambda v: store.search_vector(v, scope=memory.scope, limit=limit),
            lambda v: _old_search_vector(store, v, scope=memory.scope, limit=limit),
            lambda a, b: ids(a) == ids(b)),
        "mmr": _paired(
            captured, lambda c: shipped(*c), lambda c: _old_mmr_order(*c),
            lambda a, b: [it.id for it in a] == [it.id for it in b]),
        "fingerprint": _paired(  # a build looks each candidate's text up a few times
            texts, lambda ts: [fingerprint(t) for t in ts for _ in range(3)],
            lambda ts: [_old_fingerprint(t) for t in ts for _ in range(3)],
            lambda a, b: a == b),
    }
    for tag, fresh in (("build_cached", False), ("build_new", True)):
        times: dict[str, list[float]] = {"new": [], "old": []}
        for i, q in enumerate(questions):
            for form in (("new", "old") if i % 2 == 0 else ("old", "new")):
                text = f"{q.question} ({tag} {form} {budget} {r})" if fresh else q.question
                start = time.perf_counter()
                if form == "new":
                    session.build_sync(text, max_tokens=budget, now=now)
                else:
                    with _old_forms():
                        session.build_sync(text, max_tokens=budget, now=now)
                times[form].append((time.perf_counter() - start) * 1000.0)
        out[tag] = _summary(times)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="LoCoMo's locomo10.json")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--budgets", default="512,2048")
    ap.add_argument("--out", type=Path, default=_OUT)
    args = ap.parse_args()
    if not args.data.is_file():
        raise SystemExit(f"--data: no file at {args.data}; pass LoCoMo's locomo10.json")
    try:
        budgets = [int(b) for b in args.budgets.split(",")]
    except ValueError:
        raise SystemExit(f"--budgets: {args.budgets!r} is not a comma-separated list of "
                         "integers; pass e.g. 512,2048") from None


    session, questions, now = first_conversation(args.data, budget=512)

    rounds: list[dict[str, Any]] = []
    for r in range(args.rounds):
        row = {str(b): _budget(session, questions, now, b, r) for b in budgets}
        print(f"round {r + 1}: {json.dumps(row)}", flush=True)
        rounds.append(row)
    result = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "platform": platform.platform(), "load_average": os.getloadavg()},
              "questions": len(questions), "rounds": rounds}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
