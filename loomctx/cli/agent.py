"""``loomctx agent --demo sql "question"``: the seed's SQL agent, offline or against a model.

Without ``--base-url`` the model is scripted (the demo's three scenarios; any other question
gets a short scripted look at the tables), so the demo runs with no server, key or network.
With ``--base-url URL --model M`` the same agent talks to any OpenAI-compatible endpoint (key
from ``OPENAI_API_KEY`` when the endpoint needs one). It prints each model call's context size,
the tokens it repeats from the previous call, the schemas retrieved for it, then the answer.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from loomctx.errors import ConfigError

FALLBACK = ({"role": "assistant", "content": None, "tool_calls": [{
    "id": "call_tables", "type": "function",
    "function": {"name": "list_tables", "arguments": "{}"}}]},
    {"role": "assistant", "content": "The database holds the tables listed above; ask about "
                                     "sales, orders, customers, products, reviews or returns."})


def add_agent_parser(sub: Any) -> None:
    p = sub.add_parser("agent", help="run the demo agent (the context rebuilt before every call)")
    p.add_argument("--demo", choices=("sql",), required=True, help="which demo agent")
    p.add_argument("question", help='e.g. "Total sales of the last 7 days"')
    p.add_argument("--base-url", help="an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1"
                                      " (without it the model is scripted, offline)")
    p.add_argument("--model", default="gpt-4o", help="model name sent to the endpoint")
    p.add_argument("--max-tokens", type=int, default=16_000, help="context budget per call")
    p.add_argument("--db", type=Path, help="the SQLite file to use (default: a fresh demo one)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=run_agent)


def run_agent(args: argparse.Namespace) -> int:
    from loomctx.agent import Agent
    from loomctx.demo import scenario_for, sql_demo
    from loomctx.embed.fake import HashingEmbedder
    from loomctx.events import RecordingSink
    from loomctx.models.openai import OpenAIChatModel
    from loomctx.models.scripted import ScriptedModel

    if not args.question.strip():
        raise ConfigError('the question is empty: pass one, e.g. "Total sales of the last 7 '
                          'days"')
    if args.db is not None and not args.db.is_file():
        raise ConfigError(f"--db {str(args.db)!r} is not a file: drop --db to use a fresh demo "
                          "database")
    sink = RecordingSink()
    # Budgets are counted with gpt-4o's tokenizer (o200k), also for another endpoint's model.
    demo = sql_demo(args.question, db=args.db, embedder=HashingEmbedder(), events=sink)
    if args.base_url:
        model: Any = OpenAIChatModel(args.model, base_url=args.base_url)
    else:
        scenario = scenario_for(args.question)
        model = ScriptedModel(list(scenario.replies if scenario else FALLBACK))
    agent = Agent(model, tools=demo.tools.tools(), session=demo.session,
                  budget=args.max_tokens)
    result = agent.run_sync(args.question)
    calls: list[dict[str, Any]] = [
        {"tokens": e.tokens, "reused_prefix_tokens": e.reused_prefix_tokens,
         "retrieved": [r.id for r in e.report.items
                       if r.included and r.source == demo.dynamic.name]}
        for e in sink.events if e.kind == "context_rebuilt"]
    tools = [{"name": o.name, "status": o.status} for t in result.turns for o in t.tool_calls]
    if args.json:
        json.dump({"answer": result.output, "stop": result.stop, "calls": calls,
                   "tool_calls": tools, "model": "scripted" if not args.base_url else args.model},
                  sys.stdout, ensure_ascii=False, indent=1)
        sys.stdout.write("\n")
        return 0
    for n, c in enumerate(calls):
        print(f"call {n}: {c['tokens']} tokens, {c['reused_prefix_tokens']} repeat the previous "
              f"call; retrieved {', '.join(c['retrieved']) or '-'}")
    for t in tools:
        print(f"tool {t['name']}: {t['status']}")
    print(f"\n{result.output}")
    return 0


__all__ = ["add_agent_parser", "run_agent"]
