"""The ``loomctx`` command: ``build`` a context window, ``agent`` the demo agent, ``eval``
evidence recall, ``workspace`` a team's workspace, ``serve`` the context proxy and HTTP API,
``dev-servers`` PostgreSQL and Redis for development, ``store reembed`` a store's vectors."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Collection, Sequence
from typing import Any

from loomctx.errors import LoomctxError

COMMANDS: dict[str, str] = {
    "build": "build one context window and report what went in",
    "agent": "run the demo agent (the context rebuilt before every call)",
    "workspace": "run a team on an endpoint or offline, and show its workspace and contexts",
    "serve": "run the context proxy and HTTP API",
    "dev-servers": "run PostgreSQL + pgvector and Redis on loopback until Ctrl-C",
    "store": "maintain a memory store (re-embed its vectors)",
    "eval": "evidence recall at token budgets on a data set",
}
"""Subcommand → its one-line help.

Only the subcommand being run has its module imported and its arguments declared (some read
registries to list their choices); the others are listed by name and help. So ``loomctx
--help`` and a mistyped subcommand load no numpy, no embedder and no web stack."""


def parser(declare: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The command line parser. ``declare`` names the subcommands whose arguments it declares
    (None: all of them); the others are listed by name and help only."""
    p = argparse.ArgumentParser(prog="loomctx", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    for name, helptext in COMMANDS.items():
        if declare is None or name in declare:
            _adder(name)(sub)
        else:
            sub.add_parser(name, help=helptext)
    return p


def _adder(command: str) -> Callable[[Any], Any]:
    """The function that declares ``command``'s parser, from its module."""
    if command == "build":
        from loomctx.cli.build import add_build_parser
        return add_build_parser
    if command == "agent":
        from loomctx.cli.agent import add_agent_parser
        return add_agent_parser
    if command == "workspace":
        from loomctx.cli.workspace import add_workspace_parser
        return add_workspace_parser
    if command == "serve":
        from loomctx.cli.serve import add_serve_parser
        return add_serve_parser
    if command == "dev-servers":
        from loomctx.cli.devservers import add_dev_servers_parser
        return add_dev_servers_parser
    if command == "store":
        from loomctx.cli.store import add_store_parser
        return add_store_parser
    from loomctx.cli.eval import add_eval_parser
    return add_eval_parser


def _command(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names: its first word that is not an option."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = _command(argv)
    args = parser(declare=() if command is None else (command,)).parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except LoomctxError as exc:
        print(f"loomctx: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # pragma: no cover - e.g. piped into head
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
