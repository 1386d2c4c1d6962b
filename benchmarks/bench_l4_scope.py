"""What reading L4 tenant-wide (the seed's global L4, the default) costs a build.

A tenant of ``--agents`` agents, each with ``--sessions`` ended sessions whose summaries (L3)
were persisted to L4, in one SQLite store. A new session of one agent then builds for a
question twice: its first build reads the agent-memory pool from the store, the second reuses it
(the pool is re-read at most every 30 s). Timed for ``agent_memory_l4="agent"`` (this agent's
copies) and ``"tenant"`` (every agent's of the tenant), with how many candidates the
``L3_agent`` source offered and whether another agent's summary that holds the answer was found.

Run: python benchmarks/bench_l4_scope.py [--agents 50] [--sessions 20] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from loomctx import MemoryOptions, Session
from loomctx.controller import L4Persister
from loomctx.stores.protocol import MemoryRecord, Scope
from loomctx.stores.sqlite import SQLiteStore
from loomctx.testing import HashingEmbedder

HERE = Path(__file__).resolve().parent
QUESTION = "Which label stock should Hamburg dock 3 use until the firmware update?"
ANSWER = "use the white label stock until the firmware update on Monday"


def _fill(store: SQLiteStore, embedder: HashingEmbedder, agents: int, sessions: int) -> None:
    """L3 summaries of every agent's ended sessions, and their L4 copies."""
    records, texts = [], []
    for a in range(agents):
        for s in range(sessions):
            text = (f"Session {s} of agent {a}: order {a * 1000 + s} was refunded; the carrier "
                    f"scan {s} was late; the customer asked about invoice {a}-{s}.")
            if (a, s) == (agents - 1, sessions - 1):
                text = f"Session summary: the Hamburg dock 3 scanner rejects blue labels; {ANSWER}."
            records.append(MemoryRecord(id=f"a{a}-s{s}:summary", content=text, level="L3",
                                        agent=f"agent{a}", session=f"a{a}-s{s}",
                                        tenant="acme", timestamp=float(s), importance=1.0,
                                        metadata={"kind": "session_summary"}))
            texts.append(text)
    store.put(records, embedder.embed(texts))
    persister = L4Persister(store, embedder=embedder)
    for a in range(agents):
        persister.persist_agent(Scope(tenant="acme", agent=f"agent{a}"))


def _builds(store: SQLiteStore, embedder: HashingEmbedder, scope: str, rounds: int
            ) -> dict[str, Any]:
    first, again, offered, found = [], [], 0, False
    for r in range(rounds):
        s = Session(f"new-{scope}-{r}", agent="agent0", tenant="acme", store=store,
                    embedder=embedder, clock=lambda: 0.0,
                    memory=MemoryOptions(agent_memory_l4=scope))  # type: ignore[arg-type]
        t = time.perf_counter()
        result = s.build_sync(QUESTION, max_tokens=2000)
        first.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        s.build_sync(QUESTION, max_tokens=2000)
        again.append((time.perf_counter() - t) * 1000)
        offered = sum(row.source == "L3_agent" for row in result.report.items)
        found = ANSWER in json.dumps(result.payload)
    return {"first_build_ms": round(statistics.median(first), 1),
            "next_build_ms": round(statistics.median(again), 1),
            "l3_agent_candidates": offered, "other_agents_answer_found": found}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--agents", type=int, default=50)
    p.add_argument("--sessions", type=int, default=20)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--json", type=Path, default=HERE / "results" / "l4_scope.json")
    args = p.parse_args(argv)
    embedder = HashingEmbedder()
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "l4.db")
        _fill(store, embedder, args.agents, args.sessions)
        out: dict[str, Any] = {"agents": args.agents, "sessions_per_agent": args.sessions}
        for scope in ("agent", "tenant"):
            out[scope] = _builds(store, embedder, scope, args.rounds)
            print(scope, out[scope], flush=True)
        store.close()
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
