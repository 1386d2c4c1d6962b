"""The agent loop: what a context build costs per model call, beside the model's own latency,
and how much of each request repeats the previous one, taken from the requests the model got.

A 30-turn tool-using run (the seeded tool agent of ``_replays.py``) is played through
:class:`loomctx.Agent`: the model replies with the replay's assistant messages, the tools answer
with the replay's recorded results. Two models:

- ``http``: :class:`loomctx.OpenAIChatModel` against :class:`loomctx.testing.FakeModelServer` on
  loopback (real HTTP, JSON), so the model call's time is a real round trip;
- ``inproc``: :class:`loomctx.testing.ScriptedModel`, so only the loop and the build remain.

Prompt-cache reuse is computed from the request bodies the model received (the same metric as
``bench_cache.py``: the share of each request, tools then messages, that repeats the previous one
byte for byte from the start).

    python3 benchmarks/bench_agent.py [--turns 30] [--budget 16000] [--json PATH] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections import defaultdict, deque
from pathlib import Path
from typing import Any

from _replays import Replay, tool_agent

_OUT = Path(__file__).parent / "results" / "agent.json"


def _script(replay: Replay) -> tuple[list[str], list[dict[str, Any]], dict[str, deque[str]]]:
    """The user prompts, the assistant replies in order, and each tool's results in order."""
    prompts, replies = [], []
    results: dict[str, deque[str]] = defaultdict(deque)
    names: dict[str, str] = {}
    for turn in replay.turns:
        for msg in turn:
            if msg["role"] == "user":
                prompts.append(msg["content"])
            elif msg["role"] == "assistant":
                replies.append(msg)
                for call in msg.get("tool_calls") or ():
                    names[call["id"]] = call["function"]["name"]
            elif msg["role"] == "tool":
                results[names[msg["tool_call_id"]]].append(msg["content"])
    return prompts, replies, results


def _tools(replay: Replay, results: dict[str, deque[str]]) -> list[Any]:
    from loomctx.agent import Tool

    def answer(name: str) -> Any:
        def fn(**_: Any) -> str:
            return results[name].popleft() if results[name] else "no result recorded"
        return fn

    return [Tool(fn=answer(s["function"]["name"]), schema=s) for s in replay.tools]


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


async def _run(replay: Replay, budget: int, kind: str) -> dict[str, Any]:
    from loomctx import Agent, OpenAIChatModel, RecordingSink
    from loomctx.eval.cache import reuse_series, summarize
    from loomctx.testing import FakeModelServer, HashingEmbedder, Reply, ScriptedModel, ToolCall
    from loomctx.tokens.registry import counter_for_model

    prompts, replies, results = _script(replay)
    calls: list[float] = []
    sink = RecordingSink()
    server = None
    if kind == "http":
        steps = [Reply(text=m.get("content"), tool_calls=[
            ToolCall(c["function"]["name"], c["function"]["arguments"], c["id"])
            for c in m.get("tool_calls") or ()]) for m in replies]
        server = FakeModelServer(steps).start()
        model: Any = OpenAIChatModel("gpt-4o", base_url=server.url + "/v1", api_key="x")
    else:
        model = ScriptedModel([{k: v for k, v in m.items() if k in ("role", "content",
                                                                   "tool_calls")}
                               for m in replies])
    inner = model.complete

    async def timed(payload: Any, **kw: Any) -> Any:
        t = time.perf_counter()
        try:
            return await inner(payload, **kw)
        finally:
            calls.append((time.perf_counter() - t) * 1000)

    model.complete = timed
    agent = Agent(model, tools=_tools(replay, results), budget=budget,
                  system_prompt=replay.system_prompt, embedder=HashingEmbedder(), events=sink)
    t0 = time.perf_counter()
    for prompt in prompts:
        await agent.run(prompt)
    wall = time.perf_counter() - t0
    if server is not None:
        bodies = [{k: v for k, v in r.body.items() if k in ("tools", "messages")}
                  for r in server.requests if r.body]
        server.close()
    else:
        bodies = [dict(p) for p in model.requests]
    builds = [e.report.timings_ms["total"] for e in sink.events if e.kind == "context_rebuilt"]
    reuse = summarize(reuse_series(bodies, counter_for_model("gpt-4o").counter))
    return {
        "model": kind, "budget": budget, "turns": len(prompts), "model_calls": len(calls),
        "build_ms_p50": statistics.median(builds), "build_ms_p95": _pct(builds, 0.95),
        "model_ms_p50": statistics.median(calls), "model_ms_p95": _pct(calls, 0.95),
        "run_s": round(wall, 3), "mean_reuse": reuse["mean"], "min_reuse": reuse["min"],
        "requests": reuse["requests"] + 1,
    }


def _scenarios() -> dict[str, Any]:
    """The seed's three SQL scenarios: was each needed schema in the context of its call?"""
    from loomctx import Agent, RecordingSink
    from loomctx.demo import SCENARIOS, create_database, sql_demo
    from loomctx.testing import HashingEmbedder, ScriptedModel

    db = create_database()
    needed = present = 0
    per: dict[str, str] = {}
    for sc in SCENARIOS:
        sink = RecordingSink()
        demo = sql_demo(sc.question, db=db, embedder=HashingEmbedder(), events=sink)
        Agent(ScriptedModel(list(sc.replies)), tools=demo.tools.tools(), session=demo.session,
              budget=16_000).run_sync(sc.question)
        reports = [e.report for e in sink.events if e.kind == "context_rebuilt"]
        got = want = 0
        for i, report in enumerate(reports):
            shown = {r.id for r in report.items if r.included}
            want += len(sc.needs.get(i, ()))
            got += len(set(sc.needs.get(i, ())) & shown)
        per[sc.name] = f"{got}/{want}"
        needed, present = needed + want, present + got
    return {"needed": needed, "present": present, "per_scenario": per}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--turns", type=int, default=30)
    ap.add_argument("--budget", type=int, default=16_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path, default=_OUT)
    ap.add_argument("--quick", action="store_true", help="8 turns")
    args = ap.parse_args(argv)
    replay = tool_agent(8 if args.quick else args.turns, seed=args.seed)
    runs = [asyncio.run(_run(replay, args.budget, kind)) for kind in ("http", "inproc")]
    print("| model | calls | build p50 / p95 ms | model call p50 / p95 ms | mean reuse (min) |")
    print("|---|---:|---:|---:|---:|")
    for r in runs:
        print(f"| {r['model']} | {r['model_calls']} | {r['build_ms_p50']:.1f} / "
              f"{r['build_ms_p95']:.1f} | {r['model_ms_p50']:.2f} / {r['model_ms_p95']:.2f} | "
              f"{r['mean_reuse']:.3f} ({r['min_reuse']:.2f}) |")
    scenarios = _scenarios()
    print(f"SQL scenarios: {scenarios['present']}/{scenarios['needed']} needed schemas in the "
          f"context of the call that needed them {scenarios['per_scenario']}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"seed": args.seed, "runs": runs, "scenarios": scenarios},
                                    indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
