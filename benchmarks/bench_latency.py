"""Build latency and ingest on LoCoMo, this checkout against another one in the same run.

Why: the evidence-recall issue bounds the default build's p50 on LoCoMo at 1.5x the build of the
code it started from, and asks ingest to be re-measured with BLAS threads pinned and unpinned.
A build is timed the way ``loomctx eval`` times it: a session per conversation holding every
turn, one ``build_sync(question, max_tokens=budget)`` per question and budget. The first budget
of each question embeds the question ("new"); the later budgets find it cached ("cached").
Ingest is ``add_messages_sync`` of the whole conversation, embedding included.

Each side runs in its own process (``--peer-src`` puts another checkout first on PYTHONPATH),
alternately, ``--rounds`` times, so both share the machine's state; the JSON keeps every round.

    python3 benchmarks/bench_latency.py --data PATH/locomo10.json
    python3 benchmarks/bench_latency.py --data PATH/locomo10.json --peer-src DIR --rounds 2
    python3 benchmarks/bench_latency.py --data PATH/locomo10.json --blas-threads 0  # unpinned
    python3 benchmarks/bench_latency.py --data PATH/locomo10.json --ingest [--busy]

``--ingest`` embeds the first conversation's turns with each model embedder under each thread
setting (BLAS pinned to one thread, BLAS left alone, batches on worker threads), alternately,
``--rounds`` times; ``--busy`` keeps one core busy meanwhile (a spinning process), as on a
loaded machine. It writes ``results/ingest.json`` (``results/ingest_busy.json``).

``--ingest --history`` times what a user pays: ``add_messages_sync`` of whole histories of a
generic JSONL file (one LongMemEval_S history: ~490 messages, ~115k tokens) into a new default
``Session``, models loaded beforehand, wall and CPU seconds, this checkout and ``--peer-src``
alternately, each in its own process, ``--rounds`` times. It writes
``results/ingest_longmemeval.json``:

    nice -n 10 python3 benchmarks/bench_latency.py --ingest \
        --history PATH/longmemeval_s_dev60.jsonl.gz --histories 1 --rounds 5 --peer-src DIR

``--levers`` (with ``--ingest --history``) embeds the first history's texts in one process
under each ingest setting (MiniLM's int8 texts per pass, ``JointEmbedder(overlap=...)``),
alternately, ``--rounds`` times, and writes ``results/ingest_levers.json``.

``DIR`` is a checkout of another commit (``git worktree add DIR <commit>``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parent.parent
_OUT = Path(__file__).parent / "results" / "latency.json"


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"n": len(ordered), "p50": round(statistics.median(ordered), 2),
            "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2),
            "min": round(ordered[0], 2), "max": round(ordered[-1], 2)}


def worker(data: Path, conversations: int, budgets: list[int], blas_threads: int | None) -> dict:
    """Run in this process with whatever ``loomctx`` the path gives; returns the timings."""
    from loomctx.builder import BuildOptions
    from loomctx.eval.datasets import iter_dataset
    from loomctx.session import Session

    embedder = None
    if blas_threads is not None:  # the default model embedder, BLAS pinned or left alone
        from loomctx.embed import default_embedder

        embedder = default_embedder()
        for part in (embedder, getattr(embedder, "multilingual", None),
                     getattr(embedder, "english", None)):
            if part is not None and hasattr(part, "threads"):
                part.threads = blas_threads or None
    histories: list[tuple[Any, list[Any]]] = []
    for q in iter_dataset("locomo", data):
        if not histories or histories[-1][0] is not q.history:
            if len(histories) == conversations:
                break
            histories.append((q.history, []))
        histories[-1][1].append(q)
    new: list[float] = []
    cached: dict[int, list[float]] = {b: [] for b in budgets}
    ingest: list[float] = []
    for history, questions in histories:
        session = Session(embedder=embedder, model="cl100k_base",
                          options=BuildOptions(model="cl100k_base", format="text"),
                          clock=lambda: 0.0)
        session.build_sync("warm up", max_tokens=budgets[0])  # model and tokenizer loaded
        messages = [{"id": t.id, "role": t.role if t.role in ("user", "assistant") else "user",
                     "content": t.content, "timestamp": t.timestamp} for t in history]
        start = time.perf_counter()
        session.add_messages_sync(messages)
        ingest.append(time.perf_counter() - start)
        now = max((t.timestamp for t in history if t.timestamp is not None), default=0.0)
        for q in questions:
            for i, budget in enumerate(budgets):
                start = time.perf_counter()
                session.build_sync(q.question, max_tokens=budget, now=now)
                ms = (time.perf_counter() - start) * 1000.0
                (new if i == 0 else cached[budget]).append(ms)
    return {
        "embedder": session.embedder.name, "turns": [len(h) for h, _ in histories],
        "questions": len(new), "ingest_s": [round(s, 2) for s in ingest],
        "new_ms": {budgets[0]: _summary(new)},
        "cached_ms": {b: _summary(v) for b, v in cached.items() if v},
    }


INGEST_CONFIGS = {
    "minilm, BLAS 1 thread": ("minilm", 1, 1),
    "minilm, BLAS unpinned": ("minilm", None, 1),
    "minilm, BLAS 2 threads": ("minilm", 2, 1),
    "minilm, batches on workers (default)": ("minilm", 1, None),
    "use, BLAS 1 thread (default)": ("use", 1, None),
    "use, BLAS unpinned": ("use", None, None),
}


def ingest_matrix(data: Path, rounds: int) -> dict:
    """Seconds to embed the first conversation's turns under each thread setting."""
    from loomctx.embed import MiniLMEmbedder, UniversalSentenceEncoder
    from loomctx.eval.datasets import iter_dataset
    from loomctx.text.decoration import index_text

    history = next(iter(iter_dataset("locomo", data))).history
    texts = [index_text(t.content) for t in history]
    embedders = {}
    for name, (model, threads, workers) in INGEST_CONFIGS.items():
        embedders[name] = (MiniLMEmbedder(threads, workers=workers) if model == "minilm"
                           else UniversalSentenceEncoder(threads))
        embedders[name].embed(["warm up"])
    seconds: dict[str, list[float]] = {name: [] for name in embedders}
    for r in range(rounds):
        names = list(embedders) if r % 2 == 0 else list(embedders)[::-1]
        for name in names:
            start = time.perf_counter()
            embedders[name].embed(texts)
            seconds[name].append(round(time.perf_counter() - start, 3))
            print(f"round {r + 1} {name}: {seconds[name][-1]:.2f} s", flush=True)
    return {"turns": len(texts), "seconds": seconds,
            "median_s": {k: round(statistics.median(v), 2) for k, v in seconds.items()}}


def history_worker(path: Path, histories: int) -> dict:
    """Seconds (wall and CPU) to add each of the first ``histories`` histories of a generic
    JSONL file to a new default session, and how many texts reached the models."""
    import gzip

    from loomctx.session import Session

    opener = gzip.open if path.suffix == ".gz" else open
    rows = []
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rows.append(json.loads(line))
            if len(rows) == histories:
                break
    out: dict[str, list[Any]] = {"messages": [], "wall_s": [], "cpu_s": [], "embedded": []}
    for row in rows:
        messages = [{"role": m["role"], "content": m["content"],
                     **({"timestamp": m["timestamp"]} if m.get("timestamp") else {})}
                    for m in row["history"]]
        session = Session(clock=lambda: 0.0)
        session.embedder.inner.embed(["warm up"])  # models loaded before the clock starts
        misses = session.embedder.misses
        wall, cpu = time.perf_counter(), time.process_time()
        session.add_messages_sync(messages)
        out["wall_s"].append(round(time.perf_counter() - wall, 3))
        out["cpu_s"].append(round(time.process_time() - cpu, 3))
        out["messages"].append(len(messages))
        out["embedded"].append(session.embedder.misses - misses)
    out["embedder"] = session.embedder.name
    return out


LEVERS = {
    "before: int8 4 texts per pass, USE then MiniLM": (4, False),
    "int8 1 text per pass (default)": (1, False),
    "int8 1 text per pass, USE beside MiniLM (overlap)": (1, True),
}


def lever_matrix(path: Path, rounds: int) -> dict:
    """Wall and CPU seconds to embed one history's texts under each of :data:`LEVERS`."""
    import gzip

    from loomctx.embed import minilm
    from loomctx.embed.default import DEFAULT_WEIGHT
    from loomctx.embed.joint import JointEmbedder
    from loomctx.embed.use import UniversalSentenceEncoder
    from loomctx.text.decoration import index_text

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        row = json.loads(fh.readline())
    texts = [index_text(m["content"]) for m in row["history"]]
    embedders = {name: JointEmbedder(UniversalSentenceEncoder(), minilm.MiniLMEmbedder(),
                                     weight=DEFAULT_WEIGHT, overlap=overlap)
                 for name, (_, overlap) in LEVERS.items()}
    for embedder in embedders.values():
        embedder.embed(["warm up"])
    seconds: dict[str, dict[str, list[float]]] = {n: {"wall": [], "cpu": []} for n in LEVERS}
    for r in range(rounds):
        for name in (list(LEVERS) if r % 2 == 0 else list(LEVERS)[::-1]):
            minilm._BATCH["int8"] = LEVERS[name][0]
            wall, cpu = time.perf_counter(), time.process_time()
            embedders[name].embed(texts)
            seconds[name]["wall"].append(round(time.perf_counter() - wall, 2))
            seconds[name]["cpu"].append(round(time.process_time() - cpu, 2))
            print(f"round {r + 1} {name}: {seconds[name]}", flush=True)
    return {"texts": len(texts), "seconds": seconds,
            "summary": {n: {k: _summary(v) for k, v in s.items()} for n, s in seconds.items()}}


def history_matrix(args: argparse.Namespace) -> dict:
    """:func:`history_worker` in a process per side and round, the sides alternately."""
    sides = [_ROOT] if args.peer_src is None else [args.peer_src.resolve(), _ROOT]
    runs: dict[str, dict[str, list[Any]]] = {}
    for r in range(args.rounds):
        for src in (sides if r % 2 == 0 else sides[::-1]):
            env = {**os.environ, "PYTHONPATH": str(src)}
            cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--ingest",
                   "--history", str(args.history),
                   "--histories", str(args.histories)]
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise SystemExit(f"worker for {src} failed:\n{done.stderr[-2000:]}")
            result = json.loads(done.stdout.strip().splitlines()[-1])
            name = "this checkout" if src == _ROOT else "peer"
            side = runs.setdefault(name, {"wall_s": [], "cpu_s": [], "load_average": []})
            side["wall_s"] += result["wall_s"]
            side["cpu_s"] += result["cpu_s"]
            side["load_average"].append(round(os.getloadavg()[0], 2))
            side.update(messages=result["messages"], embedded=result["embedded"],
                        embedder=result["embedder"], commit=_commit(src))
            print(f"round {r + 1} {name:>13}: wall {result['wall_s']} s, "
                  f"cpu {result['cpu_s']} s", flush=True)
    for side in runs.values():
        side["wall"] = _summary(side["wall_s"])
        side["cpu"] = _summary(side["cpu_s"])
    return {"history": Path(args.history).name, "histories": args.histories,
            "rounds": args.rounds, "runs": runs}


def _commit(src: Path) -> str:
    out = subprocess.run(["git", "-C", str(src), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True, check=False).stdout.strip()
    return out or "unknown"


def _run(src: Path, args: argparse.Namespace) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src)}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--data", str(args.data),
           "--conversations", str(args.conversations), "--budgets", args.budgets]
    if args.blas_threads is not None:
        cmd += ["--blas-threads", str(args.blas_threads)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"worker for {src} failed:\n{out.stderr[-2000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["src"] = "this checkout" if src == _ROOT else "peer"
    result["commit"] = _commit(src)
    return result


def _machine() -> dict:
    return {"cpus": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform(), "load_average": os.getloadavg()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = ap.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", type=Path, help="LoCoMo's locomo10.json")
    source.add_argument("--history", type=Path,
                    help="with --ingest: a generic JSONL file (LongMemEval_S); time adding its "
                         "histories to a default session instead")
    ap.add_argument("--conversations", type=int, default=2,
                    help="the first N conversations (the development split's)")
    ap.add_argument("--budgets", default="512,2048,8192")
    ap.add_argument("--peer-src", type=Path, help="another checkout, run alternately with this")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--blas-threads", type=int,
                    help="pin the default embedder's BLAS threads (0: leave BLAS alone)")
    ap.add_argument("--ingest", action="store_true",
                    help="time embedding one conversation under each thread setting")
    ap.add_argument("--busy", action="store_true", help="with --ingest: keep one core busy")
    ap.add_argument("--histories", type=int, default=1, help="with --history: the first N")
    ap.add_argument("--levers", action="store_true",
                    help="with --history: each ingest setting in one process instead")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.ingest and args.history is not None:
        if not args.history.is_file():
            raise SystemExit(f"--history: no file at {args.history}; pass a generic JSONL file")
        if args.worker:
            print(json.dumps(history_worker(args.history, args.histories)))
            return
        result = lever_matrix(args.history, args.rounds) if args.levers else history_matrix(args)
        result["machine"] = _machine()
        out = args.out or _OUT.with_name("ingest_levers.json" if args.levers
                                         else "ingest_longmemeval.json")
        out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        return
    if args.data is None or not args.data.is_file():
        raise SystemExit(f"--data: no file at {args.data}; pass LoCoMo's locomo10.json")
    budgets = [int(b) for b in args.budgets.split(",")]
    if args.worker:
        print(json.dumps(worker(args.data, args.conversations, budgets, args.blas_threads)))
        return
    if args.ingest:
        busy = None
        if args.busy:
            busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            result = ingest_matrix(args.data, args.rounds)
        finally:
            if busy is not None:
                busy.kill()
                busy.wait()
        result["machine"] = _machine()
        result["busy_core"] = args.busy
        out = args.out or _OUT.with_name("ingest_busy.json" if args.busy else "ingest.json")
        out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        return
    sides = [_ROOT] if args.peer_src is None else [args.peer_src.resolve(), _ROOT]
    runs = []
    for r in range(args.rounds):
        for src in (sides if r % 2 == 0 else sides[::-1]):
            result = _run(src, args)
            result["round"] = r + 1
            runs.append(result)
            print(f"round {r + 1} {result['src']:>13} ({result['embedder']}): "
                  f"ingest {result['ingest_s']} s; new {result['new_ms']}; "
                  f"cached {result['cached_ms']}", flush=True)
    report = {"machine": _machine(), "blas_threads": args.blas_threads, "runs": runs}
    out = args.out or _OUT
    out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
