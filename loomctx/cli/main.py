"""The ``loomctx`` command: ``build`` a context window, ``agent`` the demo agent, ``eval``
evidence recall, ``workspace`` a team's workspace, ``serve`` the context proxy and HTTP API,
``dev-servers`` PostgreSQL and Redis for development, ``store reembed`` a store's vectors."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from loomctx.errors import LoomctxError


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="loomctx", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    from loomctx.cli.build import add_build_parser

    add_build_parser(sub)
    from loomctx.cli.agent import add_agent_parser

    add_agent_parser(sub)
    from loomctx.cli.workspace import add_workspace_parser

    add_workspace_parser(sub)
    from loomctx.cli.serve import add_serve_parser

    add_serve_parser(sub)
    from loomctx.cli.devservers import add_dev_servers_parser

    add_dev_servers_parser(sub)
    from loomctx.cli.store import add_store_parser

    add_store_parser(sub)
    try:
        from loomctx.cli.eval import add_eval_parser
    except ImportError:  # pragma: no cover - eval is optional while it is being built
        pass
    else:
        add_eval_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except LoomctxError as exc:
        print(f"loomctx: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # pragma: no cover - e.g. piped into head
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
