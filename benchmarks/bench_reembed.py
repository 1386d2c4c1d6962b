"""Re-embedding a store under a new embedder, against ingesting its messages again.

Why: a store written under the earlier default embedder (USE, 512 dimensions) refuses the new
default (896). ``loomctx store reembed`` moves it with every record kept. The peer is what a user
without it would do, if they still had the messages: ingest them again into a new store with the
new default (``Session.add_messages_sync``). Both embed the same texts with the same warm model,
so the difference is the store work around the embedding.

For each round and store kind, a store is first written by a USE session (not timed), then
re-embedded with the default embedder (timed); the peer ingests the same messages into an empty
store of the same kind (timed). The two run alternately, ``--rounds`` times.

    python3 benchmarks/bench_reembed.py                       # 600 synthetic messages, SQLite
    python3 benchmarks/bench_reembed.py --data PATH/locomo10.json --postgres --rounds 3
    python3 benchmarks/bench_reembed.py --quick               # 150 messages, 1 round

``--data`` takes LoCoMo's ``locomo10.json`` and uses its first conversation's turns; without it,
synthetic sentences of about LoCoMo's length (~30 tokens). ``--postgres`` adds a PostgreSQL +
pgvector store (the embedded server loomctx starts on loopback). Writes ``results/reembed.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_ROOT))

from loomctx.embed import UniversalSentenceEncoder, default_embedder  # noqa: E402
from loomctx.embed.protocol import Embedder  # noqa: E402
from loomctx.session import Session  # noqa: E402
from loomctx.stores import reembed  # noqa: E402

_OUT = Path(__file__).parent / "results" / "reembed.json"
_WORDS = ("we", "went", "to", "the", "lake", "last", "weekend", "my", "sister", "painted", "a",
          "picture", "of", "mountains", "and", "I", "started", "learning", "guitar", "because",
          "music", "helps", "me", "relax", "after", "work", "our", "dog", "loves", "long", "walks",
          "in", "park", "she", "is", "planning", "trip", "Paris", "next", "summer", "with",
          "friends", "from", "school")


def synthetic(n: int, seed: int = 0) -> list[str]:
    """``n`` sentences of 14-30 words from a fixed vocabulary (about LoCoMo's turn length)."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(14, 30))).capitalize() + "."
            for _ in range(n)]


def locomo_turns(path: Path) -> list[str]:
    """The turns of the first LoCoMo conversation, as its speakers said them."""
    from loomctx.eval.datasets import iter_dataset

    first = next(iter(iter_dataset("locomo", path)))
    return [t.content for t in first.history]


def _ingest(url: str, texts: list[str], embedder: Embedder) -> float:
    session = Session("bench", store=url, embedder=embedder)
    try:
        start = time.perf_counter()
        session.add_messages_sync([{"role": "user", "content": t} for t in texts])
        return time.perf_counter() - start
    finally:
        session.store.close()


def _reembed(url: str, embedder: Embedder) -> float:
    from loomctx.stores import open_store

    store = open_store(url)
    try:
        start = time.perf_counter()
        reembed(store, embedder)
        return time.perf_counter() - start
    finally:
        store.close()


def _summary(values: list[float]) -> dict[str, float]:
    return {"median_s": round(statistics.median(values), 2), "min_s": round(min(values), 2),
            "max_s": round(max(values), 2), "n": len(values)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, help="LoCoMo's locomo10.json (default: synthetic)")
    ap.add_argument("--messages", type=int, default=600, help="synthetic messages (default 600)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--postgres", action="store_true", help="also a PostgreSQL + pgvector store")
    ap.add_argument("--quick", action="store_true", help="150 messages, one round")
    ap.add_argument("--out", type=Path, default=_OUT)
    args = ap.parse_args()
    if args.data is not None and not args.data.is_file():
        raise SystemExit(f"--data: no file at {args.data}; pass LoCoMo's locomo10.json")
    if args.quick:
        args.messages, args.rounds = 150, 1
    texts = locomo_turns(args.data) if args.data else synthetic(args.messages)
    old, new = UniversalSentenceEncoder(), default_embedder()
    old.embed(["warm up"])
    new.embed(["warm up"])  # both models loaded before anything is timed

    server = None
    with tempfile.TemporaryDirectory() as tmp:
        fresh: dict[str, Callable[[str], str]] = {
            "sqlite": lambda tag: str(Path(tmp) / f"{tag}.db")}
        if args.postgres:
            from loomctx.servers import PostgresServer

            server = PostgresServer()
            server.start()
            pg = server
            fresh["postgres"] = lambda tag: pg.create_database()
        try:
            timings: dict[str, dict[str, list[float]]] = {
                kind: {"reembed": [], "ingest_again": []} for kind in fresh}
            for r in range(args.rounds):
                for kind, make in fresh.items():
                    order = ["reembed", "ingest_again"]
                    for side in order if r % 2 == 0 else order[::-1]:
                        url = make(f"{kind}-{r}-{side}")
                        if side == "reembed":
                            _ingest(url, texts, old)  # the store the old default left
                            seconds = _reembed(url, new)
                        else:
                            seconds = _ingest(url, texts, new)
                        timings[kind][side].append(round(seconds, 3))
                        print(f"round {r + 1} {kind} {side}: {seconds:.2f} s", flush=True)
        finally:
            if server is not None:
                server.stop()
    result: dict[str, Any] = {
        "messages": len(texts), "data": "locomo conversation 1" if args.data else "synthetic",
        "from": old.name, "to": new.name, "rounds": args.rounds, "seconds": timings,
        "summary": {kind: {side: _summary(v) for side, v in sides.items()}
                    for kind, sides in timings.items()},
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform(), "load_average": os.getloadavg()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(result["summary"], indent=1))


if __name__ == "__main__":
    main()
