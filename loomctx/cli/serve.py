"""``loomctx serve --upstream URL``: the context proxy and HTTP API (needs ``loomctx[service]``).

Point an SDK's ``base_url`` at ``http://HOST:PORT/v1`` (OpenAI) or ``http://HOST:PORT``
(Anthropic). ``--keys FILE`` maps API keys to tenants (lines ``KEY TENANT``); without it the
service is open on one tenant, so it listens on loopback unless told otherwise: on any other
address it refuses to start without ``--keys`` unless ``--allow-open`` says the operator means
it (then it warns loudly), because an open proxy spends the operator's upstream key for anyone
who can reach it. The upstream's key comes from ``$LOOMCTX_UPSTREAM_KEY``.

``--workers N`` runs N processes on the port. They share sessions only through a PostgreSQL
store and a Redis bus (:mod:`loomctx.service.shared`), so more than one worker on a SQLite or
in-memory store, or without a Redis bus, is refused before anything starts.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import socket
import sys
from typing import Any

from loomctx.errors import ConfigError, MissingDependencyError


def add_serve_parser(sub: Any) -> None:
    p = sub.add_parser("serve", help="run the context proxy and HTTP API")
    p.add_argument("--upstream", required=True,
                   help="the upstream API, e.g. https://api.openai.com/v1")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on")
    p.add_argument("--port", type=int, default=8080, help="port to listen on")
    p.add_argument("--keys", help="key file: one 'KEY TENANT' per line (or a JSON object); "
                                  "read again within a second of a change")
    p.add_argument("--allow-open", action="store_true",
                   help="serve without --keys on a non-loopback --host: anyone who can reach "
                        "the port uses the upstream key (refused without this flag)")
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
    p.add_argument("--max-sessions", type=int, default=1_000,
                   help="sessions kept loaded per tenant (the least recently used idle one "
                        "is unloaded past it; its memory stays in the store)")
    p.add_argument("--max-session-mb", type=float, default=16.0,
                   help="message megabytes the loaded sessions of one tenant may hold "
                        "together (least recently used idle ones are unloaded past it)")
    p.add_argument("--max-builds", type=int, default=1_000,
                   help="builds (reports and built requests) kept per tenant")
    p.add_argument("--max-build-mb", type=float, default=32.0,
                   help="megabytes of built requests kept per tenant (oldest builds first)")
    p.add_argument("--body-timeout", type=float, default=30.0,
                   help="seconds a request body may pause between two chunks (408 past it)")
    p.add_argument("--max-messages", type=int, default=100_000,
                   help="most messages per request")
    p.add_argument("--max-message-chars", type=int, default=1_048_576, metavar="N",
                   help="longest text of one message, in characters (a request with a longer "
                        "one: 413; an upstream reply longer: 502, not stored; default 1048576)")
    p.add_argument("--upstream-timeout", type=float, default=300.0, metavar="SECONDS",
                   help="longest an upstream call may take: a JSON answer in whole, a stream "
                        "to its first bytes and between two chunks (past it: 504; default 300)")
    p.add_argument("--max-requests", type=int, default=256, metavar="N",
                   help="requests one process serves at once, all tenants, streams included "
                        "(also its upstream connections; 503 with Retry-After past it)")
    p.add_argument("--tenant-requests", type=int, default=64, metavar="N",
                   help="requests one tenant may have in flight per process (429 with "
                        "Retry-After past it, while other tenants are served)")
    p.add_argument("--max-request-mb", type=float, default=256.0,
                   help="megabytes of request bodies in flight per process (503 past it)")
    p.add_argument("--tenant-request-mb", type=float, default=64.0,
                   help="megabytes of request bodies one tenant may have in flight per "
                        "process (429 past it; at least --max-body-mb)")
    p.add_argument("--lock-lines", type=int, default=4, metavar="N",
                   help="PostgreSQL connections each process holds its session locks on "
                        "(any number of locks each; a postgresql:// store only)")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="processes serving the port (default 1). More than 1 needs --store "
                        "postgresql://... and --bus redis://...: sessions are locked, kept and "
                        "found in PostgreSQL, events travel through Redis, so any process "
                        "serves any session, in order (N separate 'serve' processes, on one "
                        "machine or many, with the same --store and --bus do the same). "
                        "Refused on a SQLite or memory:// store, whose sessions live in one "
                        "process")
    edge = p.add_argument_group("bounds at the edge (before a request's key is read)")
    edge.add_argument("--max-header-kb", type=float, default=64.0,
                      help="largest request head (request line and headers): 431 and the "
                           "connection closed above it (default 64)")
    edge.add_argument("--max-headers", type=int, default=100,
                      help="most header lines per request (431 above; default 100)")
    edge.add_argument("--header-timeout", type=float, default=10.0, metavar="SECONDS",
                      help="longest a request head may take to arrive, from its first byte; "
                           "then the connection is closed (default 10)")
    edge.add_argument("--idle-timeout", type=float, default=5.0, metavar="SECONDS",
                      help="longest a kept-alive connection may wait for its next request "
                           "(default 5)")
    edge.add_argument("--max-client-connections", type=int, default=64, metavar="N",
                      help="connections one client address (an IPv6 /64) may hold open; one "
                           "more is closed at once (default 64)")
    edge.add_argument("--max-connections", type=int, default=4096, metavar="N",
                      help="connections the process holds open, all clients together "
                           "(default 4096)")
    edge.add_argument("--auth-failures", type=int, default=10, metavar="N",
                      help="wrong keys one client address may present in a burst; past them "
                           "its keys get 429 with Retry-After (default 10)")
    edge.add_argument("--auth-window", type=float, default=60.0, metavar="SECONDS",
                      help="seconds in which an address earns back all its --auth-failures "
                           "tries (default 60)")
    p.add_argument("--embedder", choices=("default", "hashing"), default="default",
                   help="hashing: the dependency-free fake (no meaning, fast to start)")
    p.set_defaults(func=run_serve)


def options_from(args: argparse.Namespace) -> Any:
    """The :class:`~loomctx.service.ServiceOptions` the arguments describe."""
    from loomctx.bus import open_bus
    from loomctx.service import KeyFile, ServiceOptions
    from loomctx.service.limits import EdgeLimits

    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be 0-65535, got {args.port!r}")
    for flag in ("max_body_mb", "max_session_mb", "max_build_mb", "max_request_mb",
                 "tenant_request_mb"):
        if not getattr(args, flag) > 0:
            raise ConfigError(f"--{flag.replace('_', '-')} must be > 0, got "
                              f"{getattr(args, flag)!r}")
    embedder = None
    if args.embedder == "hashing":
        from loomctx.embed.fake import HashingEmbedder

        embedder = HashingEmbedder()
    return ServiceOptions(
        upstream=args.upstream, upstream_api_key=os.environ.get("LOOMCTX_UPSTREAM_KEY"),
        keys=KeyFile(args.keys) if args.keys else {}, model=args.model, window=args.window,
        budget=args.budget, store=args.store, embedder=embedder,
        events=open_bus(args.bus) if args.bus else None,
        max_body_bytes=int(args.max_body_mb * 1024 * 1024), max_messages=args.max_messages,
        max_message_chars=args.max_message_chars,
        max_sessions=args.max_sessions,
        max_session_bytes=max(1, int(args.max_session_mb * 1024 * 1024)),
        max_builds=args.max_builds, max_build_bytes=max(1, int(args.max_build_mb * 1024 * 1024)),
        body_timeout=args.body_timeout, timeout=args.upstream_timeout,
        edge=EdgeLimits(
            max_header_bytes=int(args.max_header_kb * 1024), max_headers=args.max_headers,
            header_timeout=args.header_timeout, idle_timeout=args.idle_timeout,
            max_client_connections=args.max_client_connections,
            max_connections=args.max_connections, auth_failures=args.auth_failures,
            auth_window=args.auth_window),
        max_requests=args.max_requests, tenant_requests=args.tenant_requests,
        max_request_bytes=int(args.max_request_mb * 1024 * 1024),
        tenant_request_bytes=int(args.tenant_request_mb * 1024 * 1024),
        lock_lines=args.lock_lines)


def check_workers(workers: int, store: str, bus: str | None) -> None:
    """Refuse more than one worker unless sessions and events are shared between them."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"--workers must be an int >= 1, got {workers!r}")
    if workers == 1:
        return
    if not store.startswith(("postgresql://", "postgres://")):
        raise ConfigError(f"--workers {workers} needs a store every process shares: --store "
                          f"{store!r} keeps sessions in one process; use --store "
                          "postgresql://... (and --bus redis://...), or --workers 1")
    if not (bus or "").startswith(("redis://", "rediss://", "unix://")):
        raise ConfigError(f"--workers {workers} needs an event bus every process shares, got "
                          f"--bus {bus!r}: use --bus redis://HOST:PORT, or --workers 1")


_WORKER_ARGS = "LOOMCTX_SERVE_WORKER_ARGS"
"""How ``serve --workers N`` hands its arguments to the worker processes it starts."""


def worker_app() -> Any:
    """The app of one ``--workers`` process (a uvicorn factory), from its parent's arguments."""
    from loomctx.service import create_app
    from loomctx.service.guard import configure_worker

    raw = json.loads(os.environ[_WORKER_ARGS])
    options = options_from(argparse.Namespace(**raw))
    configure_worker(options.edge)
    return create_app(options, own_process=True)


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback one (127.0.0.0/8, ::1)."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(str(i[4][0]).split("%")[0]).is_loopback
                               for i in infos)


def check_open(host: str, keys: bool, allow_open: bool) -> str | None:
    """Refuse an open service off loopback; the warning to print when it is allowed."""
    if keys or is_loopback(host):
        return None
    if not allow_open:
        raise ConfigError(f"--host {host!r} is not a loopback address and there is no --keys: "
                          "anyone who can reach the port would use the upstream's key. Pass "
                          "--keys FILE (lines 'KEY TENANT'), or --allow-open if the network "
                          "is yours alone")
    return (f"WARNING: loomctx serve is OPEN on {host}: no --keys, so anyone who can reach "
            "this port uses the upstream and its key, and reads every session")


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
    check_workers(args.workers, args.store, args.bus)
    if args.workers > 1 and args.port == 0:
        raise ConfigError("--workers N needs a --port: with --port 0 each worker would listen "
                          "on a port of its own")
    options = options_from(args)
    warning = check_open(args.host, bool(options.keys), args.allow_open)
    _check_port(args.host, args.port)
    if warning:
        print(warning, file=sys.stderr)
    if options.model is not None:
        from loomctx.tokens.registry import counter_for_model

        counter_for_model(options.model, fallback="o200k_base")
    if args.workers > 1:
        import uvicorn

        from loomctx.service.guard import WORKER_PROTOCOL
        from loomctx.service.workers import handoff_supported, run_workers

        os.environ[_WORKER_ARGS] = json.dumps({k: v for k, v in vars(args).items()
                                               if k != "func"})
        settings: dict[str, Any] = {"log_level": "info", "http": WORKER_PROTOCOL,
                                    "timeout_keep_alive": options.edge.idle_timeout}
        if handoff_supported():  # the fewest connections first: see loomctx.service.workers
            return run_workers(args.workers, f"{__name__}:worker_app", host=args.host,
                               port=args.port, **settings)
        uvicorn.run(f"{__name__}:worker_app", factory=True, workers=args.workers,
                    host=args.host, port=args.port, **settings)
        return 0
    serve(options, host=args.host, port=args.port)
    return 0


__all__ = ["add_serve_parser", "check_open", "check_workers", "is_loopback", "options_from",
           "run_serve", "worker_app"]
