"""``loomctx serve --upstream URL``: the context proxy and HTTP API (needs ``loomctx[service]``).

Point an SDK's ``base_url`` at ``http://HOST:PORT/v1`` (OpenAI) or ``http://HOST:PORT``
(Anthropic). ``--keys FILE`` maps API keys to tenants (lines ``KEY TENANT``); without it the
service is open on one tenant, so it listens on loopback unless told otherwise. The upstream's
key comes from ``$LOOMCTX_UPSTREAM_KEY``.
"""

from __future__ import annotations

import argparse
import os
import socket
from typing import Any

from loomctx.errors import ConfigError, MissingDependencyError


def add_serve_parser(sub: Any) -> None:
    p = sub.add_parser("serve", help="run the context proxy and HTTP API")
    p.add_argument("--upstream", required=True,
                   help="the upstream API, e.g. https://api.openai.com/v1")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on")
    p.add_argument("--port", type=int, default=8080, help="port to listen on")
    p.add_argument("--keys", help="key file: one 'KEY TENANT' per line (or a JSON object)")
    p.add_argument("--store", default=os.environ.get("LOOMCTX_STORE_URL", "memory://"),
                   help="memory://, a SQLite file path (or sqlite:///PATH), or a postgresql:// "
                        "URL (default: $LOOMCTX_STORE_URL, else memory://)")
    p.add_argument("--bus", default=os.environ.get("LOOMCTX_BUS_URL"),
                   help="event bus: memory:// (in process) or a redis:// URL (default: "
                        "$LOOMCTX_BUS_URL, else in process)")
    p.add_argument("--model", help="model whose tokenizer and window the builds use "
                                   "(default: each request's model)")
    p.add_argument("--window", type=int, help="the upstream's context window in tokens")
    p.add_argument("--budget", type=int, help="most prompt tokens per request")
    p.add_argument("--max-body-mb", type=float, default=32.0, help="largest request body")
    p.add_argument("--max-sessions", type=int, default=10_000,
                   help="sessions kept loaded per tenant (the least recently used idle one "
                        "is unloaded past it; its memory stays in the store)")
    p.add_argument("--max-messages", type=int, default=100_000,
                   help="most messages per request")
    p.add_argument("--upstream-timeout", type=float, default=300.0, metavar="SECONDS",
                   help="longest an upstream call may take: a JSON answer in whole, a stream "
                        "to its first bytes and between two chunks (past it: 504; default 300)")
    p.add_argument("--embedder", choices=("default", "hashing"), default="default",
                   help="hashing: the dependency-free fake (no meaning, fast to start)")
    p.set_defaults(func=run_serve)


def options_from(args: argparse.Namespace) -> Any:
    """The :class:`~loomctx.service.ServiceOptions` the arguments describe."""
    from loomctx.bus import open_bus
    from loomctx.service import ServiceOptions, load_keys

    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be 0-65535, got {args.port!r}")
    if not args.max_body_mb > 0:
        raise ConfigError(f"--max-body-mb must be > 0, got {args.max_body_mb!r}")
    embedder = None
    if args.embedder == "hashing":
        from loomctx.embed.fake import HashingEmbedder

        embedder = HashingEmbedder()
    return ServiceOptions(
        upstream=args.upstream, upstream_api_key=os.environ.get("LOOMCTX_UPSTREAM_KEY"),
        keys=load_keys(args.keys) if args.keys else {}, model=args.model, window=args.window,
        budget=args.budget, store=args.store, embedder=embedder,
        events=open_bus(args.bus) if args.bus else None,
        max_body_bytes=int(args.max_body_mb * 1024 * 1024), max_messages=args.max_messages,
        max_sessions=args.max_sessions, timeout=args.upstream_timeout)


def _check_port(host: str, port: int) -> None:
    """Fail with one line, before the server starts, when the address cannot be listened on."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        with socket.socket(infos[0][0], socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(infos[0][4])
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}: pick another "
                          "--host or --port") from exc


def run_serve(args: argparse.Namespace) -> int:
    try:
        from loomctx.service import serve
    except ImportError as exc:
        raise MissingDependencyError("loomctx serve", "service", "fastapi and uvicorn") from exc
    options = options_from(args)
    _check_port(args.host, args.port)
    if options.model is not None:
        from loomctx.tokens.registry import counter_for_model

        counter_for_model(options.model, fallback="o200k_base")
    serve(options, host=args.host, port=args.port)
    return 0


__all__ = ["add_serve_parser", "options_from", "run_serve"]
