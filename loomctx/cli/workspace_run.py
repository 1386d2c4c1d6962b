"""``loomctx workspace run "TASK"``: the concierge → orchestrator → actions team on a real endpoint.

One model serves every role, over an OpenAI-compatible endpoint (``--provider openai``, the
default: ``--base-url`` is the API root, e.g. ``http://localhost:8000/v1``) or the Anthropic
Messages API (``--provider anthropic``: ``--base-url`` without ``/v1``). The workspace and the
conversation of ``--session`` are loaded first, so a second run continues the first; what the run
made — notes, timeline, and a record of every model call — is saved even when a call fails, and
``loomctx workspace show --contexts`` prints it.

``--knowledge DIR`` gives the ``knowledge`` action a folder to search (the project's
:class:`~loomctx.sources.knowledge.KnowledgeSource`); other lookups, such as a web search, are
Python functions (``Team(lookups=...)``).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from loomctx.errors import ConfigError
from loomctx.render.placement import PLACEMENTS

PROVIDERS = ("openai", "anthropic")


def add_run_parser(verbs: Any) -> None:
    v = verbs.add_parser("run", help="run the team on an OpenAI-compatible or Anthropic "
                                     "endpoint and save what it made")
    v.add_argument("task", help="what the team should make")
    v.add_argument("--base-url", required=True,
                   help="the endpoint: the API root of an OpenAI-compatible server "
                        "(http://host:port/v1) or of the Anthropic API (https://api.anthropic."
                        "com)")
    v.add_argument("--model", required=True, help="the model name the endpoint serves")
    v.add_argument("--provider", choices=PROVIDERS, default="openai",
                   help="the wire format (default: openai)")
    v.add_argument("--api-key-env", metavar="VAR",
                   help="the environment variable holding the API key (default: "
                        "OPENAI_API_KEY or ANTHROPIC_API_KEY when set; none for a local server)")
    v.add_argument("--db", required=True, help="the store: a SQLite file (created if absent), "
                   "or a URL (postgresql://..., sqlite:///path)")
    v.add_argument("--session", required=True, help="the session id")
    v.add_argument("--tenant", default="default", help="the tenant (default: default)")
    v.add_argument("--agent", default="loomi", help="the agent (default: loomi)")
    v.add_argument("--knowledge", metavar="DIR",
                   help="a folder of .txt/.md files the knowledge action searches")
    v.add_argument("--actions", metavar="A,B,...",
                   help="the action types the orchestrator may call (default: the seed's)")
    v.add_argument("--language", choices=("auto", "zh", "en"), default="auto",
                   help="the contexts' labels (default: auto, the task's language)")
    v.add_argument("--count-as", metavar="NAME",
                   help="count tokens as this model, encoding (cl100k_base...) or tokenizer."
                        "json path, for a model loomctx has no tokenizer for; 'estimate': a "
                        "character estimate that errs high (+10%% margin), for any model")
    v.add_argument("--placement", choices=PLACEMENTS, default=None,
                   help="where each request puts the turn's state and evidence: user_block "
                        "(default: in the user's turn, every chat template takes it), "
                        "first_system (in the one system message) or system (a system message "
                        "before the input, for endpoints that take one anywhere); with a strict "
                        "one every request is checked against the template before it is sent")
    v.add_argument("--timeout", type=float, default=120.0,
                   help="seconds per model call (default: 120)")
    v.add_argument("--retries", type=int, default=2,
                   help="retries of a transient model failure (default: 2)")
    v.set_defaults(func=run_task)


def _model(args: argparse.Namespace) -> Any:
    from loomctx.models.anthropic import AnthropicChatModel
    from loomctx.models.openai import OpenAIChatModel

    url = args.base_url.rstrip("/")
    if not url.startswith(("http://", "https://")) or len(url.split("://", 1)[1]) == 0:
        raise ConfigError(f"--base-url {args.base_url!r} is not an http(s) URL: pass e.g. "
                          "http://localhost:8000/v1")
    if not args.model.strip():
        raise ConfigError("--model is empty: pass the model name the endpoint serves")
    key = None
    if args.api_key_env is not None:
        key = os.environ.get(args.api_key_env)
        if not key:
            raise ConfigError(f"--api-key-env {args.api_key_env!r} names an unset or empty "
                              "environment variable: export it, or leave the flag out")
    if args.timeout <= 0 or args.retries < 0:
        raise ConfigError(f"--timeout must be > 0 and --retries >= 0, got {args.timeout!r} "
                          f"and {args.retries!r}")
    common: dict[str, Any] = {"base_url": url, "timeout": args.timeout,
                              "max_retries": args.retries}
    if key is not None:
        common["api_key"] = key
    if args.provider == "anthropic":
        return AnthropicChatModel(args.model, **common)
    return OpenAIChatModel(args.model, **common)


def _options(args: argparse.Namespace) -> Any:
    from loomctx.workflow import TeamOptions
    from loomctx.workspace import language_of

    language = args.language if args.language != "auto" else language_of(args.task)
    extra: dict[str, Any] = {}
    if args.actions is not None:
        actions = tuple(a.strip() for a in args.actions.split(","))
        if not all(a.isidentifier() for a in actions):
            raise ConfigError(f"--actions {args.actions!r} must be comma-separated action "
                              "names, e.g. websearch,knowledge,hitpoint")
        extra["actions"] = actions
    if args.count_as is not None:
        extra["count_as"] = args.count_as
    if args.placement is not None:
        extra["placement"] = args.placement
    from loomctx.tokens import counter_for_model
    try:
        counter_for_model(args.count_as or args.model)
    except ConfigError as exc:
        flag = "--count-as" if args.count_as else "--model"
        raise ConfigError(f"{flag} {args.count_as or args.model!r} has no tokenizer loomctx "
                          "knows, so no budget can be kept: pass --count-as with a model "
                          "family (gpt-4o, llama-3, qwen3...), an encoding (cl100k_base), a "
                          "tokenizer.json path, or 'estimate' (a character estimate that errs "
                          "high)") from exc
    return TeamOptions(language=language, **extra)


def run_task(args: argparse.Namespace) -> int:
    from loomctx._sync import run_sync
    from loomctx.stores import Scope, open_store
    from loomctx.workflow import Team
    from loomctx.workflow.world import knowledge_lookup
    from loomctx.workspace import ConversationManager, WorkSpace

    if not args.task.strip():
        raise ConfigError("the task is empty: say what the team should make")
    if "://" not in args.db and Path(args.db).is_dir():
        raise ConfigError(f"--db {args.db!r} is a directory: pass a file path")
    model = _model(args)
    options = _options(args)
    lookups = {}
    if args.knowledge is not None:
        if "knowledge" not in options.actions:
            raise ConfigError("--knowledge is given but the knowledge action is not in "
                              f"--actions {args.actions!r}: add it")
        lookups["knowledge"] = knowledge_lookup(args.knowledge,
                                                model=args.count_as or args.model)
    scope = Scope(tenant=args.tenant, agent=args.agent, session=args.session)
    store = open_store(args.db)
    try:
        team = Team(concierge=model, orchestrator=model, action=model, options=options,
                    workspace=WorkSpace.load(store, scope),
                    conversation=ConversationManager.load(store, scope), lookups=lookups)

        async def go() -> None:
            try:
                print(f"loomi: {await team.chat(args.task)}", flush=True)
                if team.running:
                    print("(the orchestrator is running...)", flush=True)
                report = await team.wait()
            finally:
                await team.stop()
            if report is not None:
                print(f"loomi: {report}")

        try:
            run_sync(go(), name="workspace run")
        finally:
            team.save(store, scope)
    finally:
        store.close()
    roles: dict[str, int] = {}
    for c in team.calls:
        roles[c.role] = roles.get(c.role, 0) + 1
    notes = sorted({n for c in team.calls for n in c.notes})
    print(f"\n{len(team.calls)} model calls ({', '.join(f'{k} {v}' for k, v in roles.items())})"
          f", {len(team.workspace)} notes; saved to {args.db} (session {args.session!r}); "
          f"see them with `loomctx workspace show --db {args.db} --session {args.session} "
          "--contexts`")
    for note in notes:
        print(f"note: {note}")
    if any(not c.build.report.exact for c in team.calls):
        print(f"token counts are estimates ({team.calls[0].build.report.counter}: characters "
              "per token with a safety margin, erring high), not the model's own counts")
    return 0


__all__ = ["add_run_parser", "run_task"]
