"""``loomctx dev-servers``: PostgreSQL + pgvector and Redis on loopback, until Ctrl-C or SIGTERM.

The servers come from the ``servers`` extra (wheels, no system service): what the tests start,
for a developer's shell. It prints one URL per server and an ``export`` line, so moving an
application from the embedded defaults (SQLite, the in-process bus) to the servers is a matter
of configuration. Without ``--data-dir`` the data lives in temporary directories removed on
exit; with it, PostgreSQL (``DIR/postgres``, fsync on) and Redis (``DIR/redis``, append-only
file, fsync on every write) keep their data across runs.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from typing import Any, NoReturn

STORE_ENV = "LOOMCTX_STORE_URL"
"""The variable the printed export line sets to the PostgreSQL URL."""
BUS_ENV = "LOOMCTX_BUS_URL"
"""The variable the printed export line sets to the Redis URL."""


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port: give 1-65535, or leave "
                                          "the option out for a free port")
    return port


def _data_dir(text: str) -> Path:
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a file: give a directory (created "
                                          "when missing) to keep the servers' data in")
    return path


def add_dev_servers_parser(sub: Any) -> None:
    p = sub.add_parser("dev-servers", help="run PostgreSQL + pgvector and Redis on loopback "
                                           "until Ctrl-C", description=__doc__)
    p.add_argument("--postgres-port", type=_port, default=None,
                   help="PostgreSQL's port (default: a free one)")
    p.add_argument("--redis-port", type=_port, default=None,
                   help="Redis's port (default: a free one)")
    p.add_argument("--data-dir", type=_data_dir, default=None,
                   help="keep the data here across runs (default: temporary, removed on exit)")

    def one_line(message: str) -> NoReturn:
        print(f"loomctx dev-servers: error: {message}", file=sys.stderr)
        sys.exit(2)

    p.error = one_line  # type: ignore[method-assign]
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from loomctx.servers import PostgresServer, RedisServer

    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set())
                for sig in (signal.SIGINT, signal.SIGTERM)}
    data: Path | None = args.data_dir
    if data is not None:
        for sub in ("postgres", "redis"):
            (data / sub).mkdir(parents=True, exist_ok=True)
    pg = PostgresServer(port=args.postgres_port, durable=data is not None,
                        data_dir=None if data is None else data / "postgres")
    redis = RedisServer(port=args.redis_port, appendonly=data is not None,
                        data_dir=None if data is None else data / "redis")
    try:
        pg.start()
        if not stop.is_set():
            redis.start()
        if not stop.is_set():
            print(f"postgresql: {pg.url}")
            print(f"redis: {redis.url}")
            print(f"export {STORE_ENV}={pg.url} {BUS_ENV}={redis.url}")
            print("Ctrl-C (or SIGTERM) stops both.", flush=True)
            while not stop.wait(0.5):  # a timed wait lets the signal handler run
                pass
    finally:
        redis.close()
        pg.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("dev-servers: PostgreSQL and Redis stopped", file=sys.stderr, flush=True)
    return 0


__all__ = ["BUS_ENV", "STORE_ENV", "add_dev_servers_parser", "run"]
