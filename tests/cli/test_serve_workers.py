"""``serve --workers N``: the parent passes each new connection to the worker holding the
fewest, so connections that come together are split evenly (on one shared socket, the worker
a connection woke accepted all that were waiting: sixteen at once all went to one worker of
two; with a socket each, the kernel's hash split them 12/4 or 13/3); stopping the parent stops
every worker."""

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
from loomctx.errors import ConfigError
from loomctx.servers import RedisServer
from loomctx.service.workers import START_WAIT, _Parent, _Worker, handoff_supported, run_workers
from loomctx.testing.processes import wait_healthy
from loomctx.testing.windowed import WindowedFakeServer

pytestmark = pytest.mark.skipif(not handoff_supported() or not Path("/proc/net").exists(),
                                reason="passing connections (Unix) and Linux /proc")


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
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:  # it exited
            continue
        for fd in fds:
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


def _workers(pid: int) -> list[int]:
    """The worker processes of the ``serve`` process ``pid``."""
    out = []
    for p in _children(pid):
        try:
            if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes():
                out.append(p)
        except OSError:  # it just exited
            continue
    return out


def _served_by(port: int, clients: list[socket.socket], workers: list[int]) -> dict[int, int]:
    """Each client's local port → the worker holding its accepted socket (waiting until every
    one is held: a connection is accepted by the parent and then passed on)."""
    mine = {c.getsockname()[1] for c in clients}
    deadline = time.monotonic() + 30
    while True:
        served = _owner(workers)
        out = {remote: served.get(inode, 0)
               for (_, remote), inode in _sockets(port, "01").items() if remote in mine}
        if (len(out) == len(clients) and 0 not in out.values()) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert len(out) == len(clients) and 0 not in out.values(), out
    return out


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
            workers = _workers(proc.pid)
            assert len(workers) == 2
            # at once, as soon as the port answers (every worker serves by then; the health
            # check's connection closed and counted)
            time.sleep(0.5)
            clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(32)]
            try:
                where = _served_by(port, clients, workers)
                per_worker = {w: sum(v == w for v in where.values()) for w in workers}
                assert per_worker == {w: 16 for w in workers}  # not a hash's 12/20

                # the next connections go to the worker that holds the fewest
                first = workers[0]
                for c in [c for c in clients if where[c.getsockname()[1]] == first][:6]:
                    clients.remove(c)
                    c.close()
                time.sleep(0.5)  # the closes counted
                more = [socket.create_connection(("127.0.0.1", port)) for _ in range(8)]
                clients += more
                later = _served_by(port, more, workers)
                assert sorted(later.values()).count(first) == 7, later  # 10+7 against 16+1

                # a worker killed is replaced once the new one serves, and the new one, holding
                # none, is given the next connections
                os.kill(first, signal.SIGKILL)
                deadline = time.monotonic() + 60
                fresh: list[int] = []
                while not fresh and time.monotonic() < deadline:
                    time.sleep(0.2)
                    fresh = [p for p in _workers(proc.pid) if p not in workers]
                assert len(fresh) == 1
                on: set[int] = set()
                while fresh[0] not in on:  # answered by the others while the new one starts
                    assert time.monotonic() < deadline
                    with socket.create_connection(("127.0.0.1", port), timeout=60) as one:
                        one.sendall(b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n")
                        assert one.recv(64).startswith(b"HTTP/1.1 200")
                        on = set(_served_by(port, [one], [*workers, *fresh]).values())
                    time.sleep(0.1)
                time.sleep(0.5)  # its close counted
                news = [socket.create_connection(("127.0.0.1", port)) for _ in range(6)]
                clients += news
                assert set(_served_by(port, news, [*workers, *fresh]).values()) == set(fresh)
                workers += fresh
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


class _Idle:
    """A worker process stand-in for the parent's choices (never started)."""

    pid = None


def _parent(ready: list[bool], open_: list[int]) -> tuple[_Parent, list[socket.socket]]:
    parent = _Parent("unused:app", {})
    theirs = []
    for r, n in zip(ready, open_, strict=True):
        mine, other = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        mine.setblocking(False)
        other.setblocking(False)
        parent.workers.append(_Worker(_Idle(), mine, open=n, ready=r))  # type: ignore[arg-type]
        theirs.append(other)
    return parent, theirs


def _given(theirs: list[socket.socket]) -> list[int]:
    """How many connections each worker was given (their descriptors closed)."""
    out = []
    for sock in theirs:
        n = 0
        while True:
            try:
                _, fds, _, _ = socket.recv_fds(sock, 16, 4)
            except BlockingIOError:
                break
            for fd in fds:
                os.close(fd)
            n += 1
        out.append(n)
    return out


def _handed(parent: _Parent, count: int) -> None:
    for _ in range(count):
        a, b = socket.socketpair()
        with b:
            parent.hand(a)
            assert a.fileno() == -1  # the parent's copy is closed


@pytest.mark.parametrize(("ready", "open_", "count", "given"), [
    ([True, True], [0, 0], 16, [8, 8]),  # fewest first, ties taking turns
    ([True, True], [10, 16], 8, [7, 1]),  # 10+7 against 16+1
    ([True, False], [5, 0], 4, [4, 0]),  # one still starting gets none while another serves
    ([False, False], [1, 0], 3, [1, 2]),  # none serves yet: the fewest still
])
def test_the_parent_gives_each_connection_to_the_serving_worker_holding_the_fewest(
        ready: list[bool], open_: list[int], count: int, given: list[int]) -> None:
    parent, theirs = _parent(ready, open_)
    _handed(parent, count)
    assert _given(theirs) == given
    assert [w.open for w in parent.workers] == [o + g for o, g in zip(open_, given, strict=True)]


def test_closes_and_readiness_reach_the_parent_and_a_gone_worker_gets_nothing() -> None:
    parent, theirs = _parent([False, True], [3, 3])
    assert not parent.all_serve(0.0)
    theirs[0].send(b"!")  # serves now
    theirs[0].send(b"-")
    theirs[0].send(b"-")  # two of its connections closed
    parent.heard(parent.workers[0])
    assert parent.workers[0].ready and parent.workers[0].open == 1
    assert parent.all_serve(0.0)
    theirs[1].close()  # gone: its pair reads as closed
    parent.heard(parent.workers[1])
    _handed(parent, 2)
    assert parent.workers[0].open == 3 and parent.workers[1].open == 3


def test_the_parent_accepts_after_the_start_wait_whoever_serves() -> None:
    parent, _ = _parent([False, True], [0, 0])
    assert not parent.all_serve(START_WAIT - 1)
    assert parent.all_serve(START_WAIT + 1)


def test_a_port_taken_before_the_parent_listens_is_one_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=f"cannot listen on 127.0.0.1:{port}"):
            run_workers(2, "unused:app", host="127.0.0.1", port=port)
