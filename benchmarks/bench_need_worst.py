"""What the worst message costs to read: ``need_of`` on texts made to make its patterns backtrack.

Every turn build reads its newest user message (:func:`loomctx.text.need.need_of`), so a
message's cost is paid on each request of a proxied conversation. A message longer than
4,000 characters is read at its start and end only, so what one message can cost is the cost
of its worst 4,000 characters. These are: long runs of one character or of a few words
(blanks, commas, question marks, dashes, parentheses, "please", "谢谢", …), each between the
starts and ends a message may have ("when did she go", "Tell me", "remind me"), seeded so
every run reads the same texts.

Each message is read by :func:`need_of` and :func:`with_before` (a follow-up reads the turn
before too). A worker process times each message (the best of ``--reps``) for one code tree;
``--peer PATH`` (another commit's checkout, e.g. from ``git archive``) is timed in the same
run, the two alternating ``--rounds`` times. Per message the median over rounds is kept; the
report gives the median, 90th percentile and maximum over messages and the five slowest.

    python3 benchmarks/bench_need_worst.py [--peer PATH --peer-label COMMIT] [--label COMMIT]
        [--rounds 3] [--json PATH]

Results: ``benchmarks/results/need_worst.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
_OUT = Path(__file__).parent / "results" / "need_worst.json"
LENGTH = 3990
"""Characters per message: within the 4,000 that are read whole."""
UNITS = [" ", ",", "please", "?", "(", ")", " - ", "what", "tell me", "，", "谢谢", "吗", ":", "\n",
         "a", "I", "the", "known as", "by", "who", "thanks", "!", ".", "Caroline", "remind me",
         "did", "if you", "—", "'", "\t", "x", "Happy", "Friday", "Moving on to", "here goes",
         "right", "...", "what's", "how", "it", "that", "there", "2019", "我", "什么", ";", "  "]
STARTS = ["", "when did she go", "what ", "Tell me "]
ENDS = ["", "x", "?", " remind me", "please"]


def messages(count: int, seed: int = 0) -> list[str]:
    """``count`` messages, each a start, one short unit repeated to :data:`LENGTH` characters
    and an end; the first of every unit alone after each start, the rest drawn at random."""
    def said(start: str, unit: str, end: str) -> str:
        return start + unit * max(1, (LENGTH - len(start) - len(end)) // len(unit)) + end

    rng = random.Random(seed)
    out = [said(start, unit, "x") for unit in UNITS for start in STARTS[:2]]
    while len(out) < count:
        unit = "".join(rng.choice(UNITS) + rng.choice(["", " "]) for _ in range(rng.randint(1, 3)))
        out.append(said(rng.choice(STARTS), unit, rng.choice(ENDS)))
    return out[:count]


def _worker(path: str, reps: int) -> None:
    """Time each message of ``path`` with the loomctx this process imports; print the
    milliseconds as JSON."""
    import loomctx
    from loomctx.text.need import need_of, with_before

    code = os.environ.get("PYTHONPATH", "")
    if code and not loomctx.__file__.startswith(code):  # another install shadowed the tree
        raise SystemExit(f"imported {loomctx.__file__}, not the tree at {code}")
    texts = json.loads(Path(path).read_text(encoding="utf-8"))
    out = []
    for text in texts:
        best = float("inf")
        for _ in range(reps):
            t = time.perf_counter()
            with_before(need_of(text), text)
            best = min(best, time.perf_counter() - t)
        out.append(best * 1000)
    print(json.dumps(out))


def _run(code: Path, path: str, reps: int) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run([sys.executable, __file__, "--worker", path, "--reps", str(reps)],
                          env=env, capture_output=True, text=True, check=True, cwd=code)
    return [float(x) for x in json.loads(done.stdout)]


def _summary(ms: list[float], texts: list[str]) -> dict[str, Any]:
    order = sorted(range(len(ms)), key=lambda i: -ms[i])
    return {"median_ms": round(statistics.median(ms), 3),
            "p90_ms": round(sorted(ms)[int(0.9 * (len(ms) - 1))], 3),
            "max_ms": round(max(ms), 2),
            "slowest": [{"ms": round(ms[i], 2), "start": texts[i][:24], "end": texts[i][-24:]}
                        for i in order[:5]]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--peer", type=Path, help="another code tree to time in the same run")
    ap.add_argument("--label", default="this", help="this tree's name in the results")
    ap.add_argument("--peer-label", default="peer", help="the peer's name (e.g. its commit)")
    ap.add_argument("--count", type=int, default=300, help="messages (default 300)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=_OUT)
    ap.add_argument("--quick", action="store_true", help="40 messages, one round, one rep")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        _worker(args.worker, args.reps)
        return 0
    if args.quick:
        args.count, args.rounds, args.reps = 40, 1, 1
    if args.peer is not None and not (args.peer / "loomctx" / "text" / "need.py").is_file():
        ap.error(f"--peer {args.peer}: no loomctx/text/need.py there; pass a checkout's root")
    if args.peer is not None and args.label == args.peer_label:
        ap.error("--label and --peer-label must differ")
    texts = messages(args.count, args.seed)
    codes = {args.label: ROOT, **({args.peer_label: args.peer.resolve()} if args.peer else {})}
    times: dict[str, list[list[float]]] = {name: [] for name in codes}
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "messages.json")
        Path(path).write_text(json.dumps(texts), encoding="utf-8")
        for _ in range(args.rounds):  # alternate, so both see the same machine
            for name, code in codes.items():
                times[name].append(_run(code, path, args.reps))
    result: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "messages": len(texts), "characters": LENGTH, "rounds": args.rounds, "reps": args.reps,
        "seed": args.seed, "runs": {}}  # trees by label: a path names only this machine
    for name, rounds in times.items():
        ms = [statistics.median(r[i] for r in rounds) for i in range(len(texts))]
        spread = [max(r[i] for r in rounds) - min(r[i] for r in rounds) for i in range(len(texts))]
        result["runs"][name] = {**_summary(ms, texts),
                                "max_spread_ms": round(max(spread), 2)}
        s = result["runs"][name]
        print(f"{name:8s} median {s['median_ms']:.2f} ms  p90 {s['p90_ms']:.2f}  "
              f"max {s['max_ms']:.1f} ms  (spread over rounds at most {s['max_spread_ms']:.1f})")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
