"""``loomctx agent --demo sql "question"``: the demo SQL agent, offline or against a model.

Without ``--base-url`` the model is scripted (the demo's three scenarios; any other question
gets a short scripted look at the tables), so the demo runs with no server, key or network.
With ``--base-url URL --model M`` the same agent talks to any OpenAI-compatible endpoint (key
from ``OPENAI_API_KEY`` when the endpoint needs one). It prints each model call's context size,
the tokens it repeats from the previous call and the schemas retrieved for it, each tool call
with its result (``error`` when it failed) as the agent runs, then the answer.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

from loomctx.errors import ConfigError

FALLBACK = ({"role": "assistant", "content": None, "tool_calls": [{
    "id": "call_tables", "type": "function",
    "function": {"name": "list_tables", "arguments": "{}"}}]},
    {"role": "assistant", "content": "The database holds the tables listed above; ask about "
                                     "sales, orders, customers, products, reviews or returns "
                                     "(the offline demo plays its three scripted questions)."})


def add_agent_parser(sub: Any) -> None:
    p = sub.add_parser("agent", help="run the demo agent (the context rebuilt before every call)")
    p.add_argument("--demo", choices=("sql",), required=True, help="which demo agent")
    p.add_argument("question", help='e.g. "Total sales of the last 7 days"')
    p.add_argument("--base-url", help="an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1"
                                      " (without it the model is scripted, offline)")
    p.add_argument("--model", default="gpt-4o", help="model name sent to the endpoint")
    p.add_argument("--max-tokens", type=int, default=16_000, help="context budget per call")
    p.add_argument("--placement", choices=("system", "first_system", "user_block"),
                   help="where the per-turn schema block goes: system messages mid-conversation"
                        " (default), the first system message, or the user's turn (for local "
                        "servers whose chat template takes one leading system message)")
    p.add_argument("--db", type=Path, help="the SQLite file to use (default: a fresh demo one)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=run_agent)


def run_agent(args: argparse.Namespace) -> int:
    from loomctx.agent import Agent
    from loomctx.demo import scenario_for, sql_demo
    from loomctx.embed.fake import HashingEmbedder
    from loomctx.models.openai import OpenAIChatModel
    from loomctx.models.scripted import ScriptedModel
    from loomctx.options import BuildOptions

    if not args.question.strip():
        raise ConfigError('the question is empty: pass one, e.g. "Total sales of the last 7 '
                          'days"')
    if args.db is not None and not args.db.is_file():
        raise ConfigError(f"--db {str(args.db)!r} is not a file: drop --db to use a fresh demo "
                          "database")
    show = _Show(live=not args.json)
    # Budgets are counted with gpt-4o's tokenizer (o200k), also for another endpoint's model.
    options = BuildOptions(placement=args.placement)
    demo = sql_demo(args.question, db=args.db, embedder=HashingEmbedder(), events=show,
                    options=options)
    show.dynamic = demo.dynamic.name
    if args.base_url:
        model: Any = OpenAIChatModel(args.model, base_url=args.base_url)
    else:
        scenario = scenario_for(args.question)
        model = ScriptedModel([_scripted(r) for r in (scenario.replies if scenario
                                                      else FALLBACK)])
    agent = Agent(model, tools=demo.tools.tools(on_result=show.tool_ran),
                  session=demo.session, budget=args.max_tokens)
    result = agent.run_sync(args.question)
    outcomes = [o for t in result.turns for o in t.tool_calls]
    status = [o.status for o in outcomes]
    tools = [{"name": o.name, "status": o.status, "output": o.content} for o in outcomes]
    if args.json:
        json.dump({"answer": result.output, "stop": result.stop, "calls": show.calls,
                   "tool_calls": tools, "model": "scripted" if not args.base_url else args.model},
                  sys.stdout, ensure_ascii=False, indent=1)
        sys.stdout.write("\n")
        return 0
    failed = sum(1 for st in status if st != "ok")
    if failed:
        print(f"\n{failed} of {len(status)} tool calls failed")
    print(f"\n{result.output}")
    return 0


class _Show:
    """An event sink and tool callback that prints the run as it happens (or records it)."""

    def __init__(self, *, live: bool) -> None:
        self.live = live
        self.dynamic = ""
        self.calls: list[dict[str, Any]] = []

    def emit(self, event: Any) -> None:
        if event.kind != "context_rebuilt":
            return
        call = {"tokens": event.tokens, "reused_prefix_tokens": event.reused_prefix_tokens,
                "retrieved": [r.id for r in event.report.items
                              if r.included and r.source == self.dynamic]}
        self.calls.append(call)
        if self.live:
            print(f"call {len(self.calls) - 1}: {call['tokens']} tokens, "
                  f"{call['reused_prefix_tokens']} repeat the previous call; retrieved "
                  f"{', '.join(call['retrieved']) or '-'}", flush=True)

    def tool_ran(self, name: str, arguments: dict[str, Any], output: str) -> None:
        failed = output.startswith("error:")
        if self.live:
            shown = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
            print(f"tool {name}({shown}): {'error' if failed else 'ok'}", flush=True)
            print(textwrap.indent(output, "  "), flush=True)


def _scripted(reply: Any) -> Any:
    """A scripted reply whose ``{result}`` is filled from the last tool result it was shown."""
    from loomctx.demo.scenarios import RESULT, fill_result

    if RESULT not in str(reply.get("content") or ""):
        return reply

    def step(payload: Any) -> Any:
        tool = [m for m in payload.get("messages", ()) if m.get("role") == "tool"]
        return fill_result(reply, str(tool[-1]["content"]) if tool else None)

    return step


__all__ = ["add_agent_parser", "run_agent"]
