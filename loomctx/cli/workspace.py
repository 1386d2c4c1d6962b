"""``loomctx workspace show|demo|run``: print a team's workspace from its store, or make one.

``show --db PATH --session ID`` reads the notes, the orchestrator timeline and the command quota
saved in one session's scope of a SQLite store; with ``--contexts``, every model call too: the
role that made it, its context, the budget report's summary and the notes it expanded.
``demo --db PATH`` runs the scripted campaign (:mod:`loomctx.workflow.demo`) offline and saves
it there. ``run "TASK" --base-url URL --model M`` runs the team against a real OpenAI-compatible
or Anthropic endpoint (:mod:`loomctx.cli.workspace_run`) and saves what it made.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from loomctx.errors import ConfigError

PREVIEW = 80
"""Characters of a note's or an instruction's preview."""


def add_workspace_parser(sub: Any) -> None:
    p = sub.add_parser("workspace", help="run a team on an endpoint or offline, and show its "
                                         "workspace and contexts")
    verbs = p.add_subparsers(dest="verb", required=True)
    for name, helptext in (("show", "print the notes, the timeline and the quota"),
                           ("demo", "run the scripted campaign offline and save it")):
        v = verbs.add_parser(name, help=helptext)
        v.add_argument("--db", required=True, help="the store: a SQLite file, or a URL "
                       "(postgresql://..., sqlite:///path)")
        v.add_argument("--session", default="demo", required=name == "show",
                       help="the session id" + (" (default: demo)" if name == "demo" else ""))
        v.add_argument("--tenant", default="default", help="the tenant (default: default)")
        v.add_argument("--agent", default="loomi", help="the agent (default: loomi)")
        if name == "show":
            v.add_argument("--json", action="store_true", help="print one JSON document")
    show = verbs.choices["show"]
    show.add_argument("--contexts", action="store_true",
                      help="also print every model call: its role, its context, the budget "
                           "report's summary and the notes it expanded")
    show.add_argument("--html", metavar="PATH",
                      help="also write the model calls as a self-contained HTML page")
    show.set_defaults(func=run_show)
    verbs.choices["demo"].set_defaults(func=run_demo)
    from loomctx.cli.workspace_run import add_run_parser
    add_run_parser(verbs)


def _scope(args: argparse.Namespace) -> Any:
    from loomctx.stores import Scope

    return Scope(tenant=args.tenant, agent=args.agent, session=args.session)


def run_demo(args: argparse.Namespace) -> int:
    from loomctx.stores import open_store
    from loomctx.workflow.demo import run_campaign

    if "://" not in args.db and Path(args.db).is_dir():
        raise ConfigError(f"--db {args.db!r} is a directory: pass a file path")
    scope = _scope(args)
    store = open_store(args.db)
    try:
        c = run_campaign(store, scope)
    finally:
        store.close()
    print(f"ran the offline campaign: {len(c.team.calls)} model calls, "
          f"{len(c.team.workspace)} notes; saved to {args.db} (session {args.session!r})")
    print(f"loomi: {c.team.conversation.history[-1].content}")
    return 0


def run_show(args: argparse.Namespace) -> int:
    from loomctx.stores import open_store
    from loomctx.workflow.record import load_calls
    from loomctx.workspace import ConversationManager, Quota, WorkSpace

    if "://" not in args.db and not Path(args.db).is_file():
        raise ConfigError(f"--db {args.db!r} is not a file: run `loomctx workspace demo "
                          f"--db {args.db}` first, or pass an existing store")
    scope = _scope(args)
    store = open_store(args.db)
    try:
        ws = WorkSpace.load(store, scope)
        conv = ConversationManager.load(store, scope)
        calls = load_calls(store, scope)
    finally:
        store.close()
    if not len(ws) and not conv.history:
        raise ConfigError(f"no workspace in tenant {args.tenant!r}, agent {args.agent!r}, "
                          f"session {args.session!r} of {args.db!r}: check --session, "
                          "--agent and --tenant")
    quota = Quota()
    mx = quota.max_commands(len(conv.calls))
    executed = len(conv.execution_log())
    doc = {"session": args.session, "tactics": ws.tactics,
           "notes": [{"id": n.id, "type": n.type, "source": n.source, "content": n.content,
                      "review_status": n.review_status, "referenceable": n.referenceable}
                     for n in ws],
           "timeline": conv.to_dict()["calls"],
           "quota": {"executed": executed, "max": mx, "remaining": mx - executed}}
    if args.contexts:
        doc["calls"] = calls
    if args.html is not None:
        _write_html(args, doc, calls)
    if args.json:
        json.dump(doc, sys.stdout, ensure_ascii=False, indent=1)
        sys.stdout.write("\n")
        return 0
    print(f"workspace {args.tenant}/{args.agent}/{args.session}: {len(ws)} notes, "
          f"{len(conv.calls)} orchestrator calls")
    print("\nnotes:")
    for n in ws:
        extra = f", {n.review_status}" if n.review_status else ""
        print(f"  @{n.id} ({n.type}, from {n.source or '-'}{extra}): {_short(n.content)}")
    if ws.tactics:
        print(f"\ntactics: {_short(ws.tactics)}")
    print("\ntimeline:")
    for i, call in enumerate(conv.calls, start=1):
        print(f"  # task {i}: {_short(call.message)}")
        for r in call.execution_records:
            print(f"    Round{r.round}: observe: {_short(r.observe)} | think: {_short(r.think)}")
            for a in r.actions:
                made = " ".join(f"@{n}" for n in a.notes_created) or "-"
                print(f"      {a.agent}: {_short(a.instruction)} -> {made}")
        if call.response is not None:
            print(f"    response: {_short(call.response)}")
    print(f"\nquota: executed {executed}/{mx}, remaining {mx - executed}")
    if args.contexts:
        print_contexts(calls)
    return 0


def _write_html(args: argparse.Namespace, doc: dict[str, Any],
                calls: list[dict[str, Any]]) -> None:
    from loomctx.report_html import render_workspace_html

    out = Path(args.html)
    if out.is_dir() or not out.parent.is_dir():
        raise ConfigError(f"--html {args.html!r} must be a file path in an existing folder")
    page = render_workspace_html(f"{args.tenant}/{args.agent}/{args.session}", calls,
                                 notes=doc["notes"])
    try:
        out.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write --html {args.html!r}: {exc.strerror}") from exc
    print(f"wrote {args.html} ({len(calls)} model calls)", file=sys.stderr)


def print_contexts(calls: list[dict[str, Any]]) -> None:
    """Each model call: its role, the budget report's summary, the notes it expanded, what
    the provider could not take, and the context itself, indented."""
    print(f"\ncontexts: {len(calls)} model calls" + (
        "" if calls else " saved (a workspace made before calls were recorded)"))
    for n, c in enumerate(calls, start=1):
        r = c["report"]
        role = c["role"] + (f" {c['action']}" if c.get("action") else "")
        counted = "" if r.get("exact", True) else " (estimated)"
        print(f"\n#{n} {role} ({c['format']}): {c['tokens']}/{c['budget']} tokens{counted}; "
              "report: "
              f"{r['included']}/{r['items']} items shown, shortened: "
              f"{' '.join(r['shortened']) or '-'}, dropped: {' '.join(r['dropped']) or '-'}")
        print(f"   expanded: {' '.join('@' + e for e in c['expanded']) or '-'}")
        for note in c.get("notes", ()):
            print(f"   note: {note}")
        print("   context:")
        for line in c["context"].splitlines():
            print(f"     {line}")
        print(f"   reply: {_short(c.get('reply', ''))}")


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat[:PREVIEW] + "..." if len(flat) > PREVIEW else flat


__all__ = ["add_workspace_parser", "run_demo", "run_show"]
