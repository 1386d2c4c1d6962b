"""``serve --workers N``: each worker listens on a socket of its own, so connections that come
together are spread over the workers (on one shared socket, the worker a connection woke
accepted all that were waiting: sixteen at once all went to one worker of two); stopping the
parent stops every worker."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loomctx.cli.main import main
from loomctx.servers import RedisServer
from loomctx.service.workers import reuse_port_supported
from loomctx.testing.processes import wait_healthy
from loomctx.testing.windowed import WindowedFakeServer

pytestmark = pytest.mark.skipif(not reuse_port_supported() or not Path("/proc/net").exists(),
                                reason="SO_REUSEPORT and Linux /proc")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _sockets(port: int, state: str) -> dict[tuple[int, int], int]:
    """(local port, remote port) → socket inode of the IPv4 TCP sockets in ``state``."""
    out = {}
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        f = line.split()
        local, remote = int(f[1].split(":")[1], 16), int(f[2].split(":")[1], 16)
        if f[3] == state and local == port:
            out[local, remote] = int(f[9])
    return out


def _owner(pids: list[int]) -> dict[int, int]:
    """Socket inode → the pid of ``pids`` holding it."""
    owners = {}
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                owners[int(target[8:-1])] = pid
    return owners


def _children(pid: int) -> list[int]:
    kids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if parent == pid:
                kids.append(int(entry.name))
    return kids


def test_connections_that_come_together_are_spread_over_the_workers(
        pg_url: str, redis_server: RedisServer) -> None:
    port = _free_port()
    with WindowedFakeServer(window=4000, default="ok") as upstream:
        proc = subprocess.Popen(
            [sys.executable, "-m", "loomctx.cli.main", "serve", "--upstream",
             upstream.url + "/v1", "--port", str(port), "--embedder", "hashing", "--workers",
             "2", "--store", pg_url, "--bus", redis_server.url],
            env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_healthy(f"http://127.0.0.1:{port}/health", proc)
            workers = [p for p in _children(proc.pid)
                       if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes()]
            assert len(workers) == 2
            seen: set[int] = set()
            deadline = time.monotonic() + 60
            while len(seen) < 2 and time.monotonic() < deadline:  # both listen
                with socket.create_connection(("127.0.0.1", port)) as one:
                    time.sleep(0.05)
                    inode = _sockets(port, "01").get((port, one.getsockname()[1]))
                    seen.add(_owner(workers).get(inode or -1, 0))
                seen.discard(0)

            clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(32)]
            try:
                time.sleep(0.5)  # accepted
                mine = {c.getsockname()[1] for c in clients}
                accepted = {inode for (_, remote), inode in _sockets(port, "01").items()
                            if remote in mine}
                served = _owner(workers)
                per_worker = {w: sum(served.get(i) == w for i in accepted) for w in workers}
                assert sum(per_worker.values()) == 32
                assert all(n > 0 for n in per_worker.values()), per_worker
            finally:
                for c in clients:
                    c.close()
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=90) == 0
        for worker in workers:  # stopped with the parent
            assert not Path(f"/proc/{worker}").exists() or \
                "Z" in Path(f"/proc/{worker}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_workers_need_a_port_of_their_own(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--upstream", "http://127.0.0.1:9", "--embedder", "hashing",
                 "--workers", "2", "--port", "0", "--store", "postgresql://u@127.0.0.1:9/db",
                 "--bus", "redis://127.0.0.1:9"]) == 2
    assert "--workers N needs a --port" in capsys.readouterr().err
