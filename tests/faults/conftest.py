"""Fault tests: real services that the test itself stops, restarts and breaks.

The shared PostgreSQL and Redis (scripts/services.sh) serve every checkout and test run
on the machine, so a test that restarts a service gets its own: ``private_postgres`` is
a PostgreSQL 15 cluster initialised into a temporary directory (run as the ``postgres``
OS user when we are root, as scripts/services.sh does) on a free port, and
``private_redis`` a redis-server on a free port with nothing persisted. Both are
session-scoped (initdb takes seconds); each test takes a fresh database of its own.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from hcp import migrate
from kernel.db import make_engine
from tests.ports import free_port

PG_BIN = Path(os.environ.get("HCP_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
REQUIRED = os.environ.get("HCP_TEST_REQUIRE_SERVICES") == "1"


def _missing(what: str) -> None:
    if REQUIRED:
        pytest.fail(f"{what}, but HCP_TEST_REQUIRE_SERVICES=1")
    pytest.skip(what)


def wait_for(check: Callable[[], object], timeout: float, what: str, every: float = 0.1) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class PrivatePostgres:
    """A PostgreSQL cluster of the test's own, to stop and restart at will."""

    def __init__(self, root: Path, port: int) -> None:
        self.root, self.port = root, port
        self.data, self.log = root / "data", root / "postgres.log"
        self._as_postgres = os.geteuid() == 0  # postgres refuses to run as root

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [*(["runuser", "-u", "postgres", "--"] if self._as_postgres else []), *args]
        return subprocess.run(command, capture_output=True, text=True, check=check, timeout=120)

    def init(self) -> None:
        if self._as_postgres:
            shutil.chown(self.root, "postgres", "postgres")
        self._run(str(PG_BIN / "initdb"), "-D", str(self.data), "-U", "hcp", "--auth=trust",
                  "--no-sync", "-E", "UTF8")
        self.start()

    def start(self) -> None:
        options = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off -c max_connections=100")
        self._run(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-o", options,
                  "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        """``fast`` ends every session (what a restart does to clients); ``immediate``
        is a crash."""
        self._run(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop",
                  check=False)

    def restart(self, down_s: float = 0.0, mode: str = "fast") -> None:
        """Stop (every client's connection ends), stay down ``down_s``, start again."""
        self.stop(mode)
        time.sleep(down_s)
        self.start()

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://hcp@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A fresh database migrated to head; its URL."""
        name = f"hcp_f_{uuid.uuid4().hex[:10]}"
        admin = make_engine(self.url(), isolation_level="AUTOCOMMIT", pool_pre_ping=False)
        with admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE {name}"))
        admin.dispose()
        migrate.upgrade(self.url(name))
        return self.url(name)


@pytest.fixture(scope="session")
def private_postgres() -> Iterator[PrivatePostgres]:
    if not (PG_BIN / "initdb").exists():
        _missing(f"no PostgreSQL 15 binaries under {PG_BIN} (set HCP_TEST_PG_BIN)")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            _missing("running as root without a 'postgres' OS user to run PostgreSQL as")
    root = Path(tempfile.mkdtemp(prefix="hcp-faults-pg-"))
    cluster = PrivatePostgres(root, free_port())
    try:
        cluster.init()
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(root, ignore_errors=True)
        _missing(f"could not start a private PostgreSQL: {exc.stderr or exc.stdout}")
    yield cluster
    cluster.stop("immediate")
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def private_database(private_postgres: PrivatePostgres) -> str:
    """A database of this test's own in the private cluster (a cluster restart reaches it)."""
    return private_postgres.create_database()


class PrivateRedis:
    """A redis-server of the test's own; ``start`` and ``stop`` at will (nothing persisted)."""

    def __init__(self, root: Path, port: int) -> None:
        self.root, self.port = root, port
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        binary = shutil.which("redis-server")
        assert binary is not None
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.root)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(self._answers, 20, "redis-server to answer")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(20)
        self.proc = None

    def _answers(self) -> bool:
        with socket.socket() as s:
            s.settimeout(0.5)
            try:
                s.connect(("127.0.0.1", self.port))
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
            except OSError:
                return False


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    """Not started: a port where nothing listens until the test calls ``start``."""
    if shutil.which("redis-server") is None:
        _missing("no redis-server on PATH")
    redis = PrivateRedis(tmp_path, free_port())
    yield redis
    redis.stop()
