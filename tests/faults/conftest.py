"""Fault tests: real services that the test itself stops, restarts and breaks.

The shared PostgreSQL and Redis (scripts/services.sh) serve every checkout and test run
on the machine, so a test that restarts a service gets its own: ``private_postgres`` is
a PostgreSQL 15 cluster initialised into a temporary directory (run as the ``postgres``
OS user when we are root, as scripts/services.sh does) on a free port, and
``private_redis`` a redis-server on a free port with nothing persisted. Both are
session-scoped (initdb takes seconds); each test takes a fresh database of its own.
``private_kafka`` is a single-node KRaft broker of the test's own, on free ports, run
to
``kill -9`` and start again on the same ports and data. It runs from the jars
``scripts/services.sh kafka-libs`` names, assembling them if this machine has none: they
are shared by every checkout, so a clone whose ``services.sh up`` found another checkout's
broker running has them too.
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
SERVICES_SH = Path(__file__).resolve().parents[2] / "scripts" / "services.sh"
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


class PrivateKafka:
    """A single-node KRaft broker of the test's own (the settings of scripts/services.sh,
    on other ports); ``kill`` is ``kill -9``, ``start`` brings it back on the same data."""

    def __init__(self, root: Path, port: int, controller_port: int) -> None:
        self.root, self.port, self.controller_port = root, port, controller_port
        self.config, self.log = root / "server.properties", root / "kafka.out"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _java(self, *args: str) -> list[str]:
        return ["java", "-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-Djava.awt.headless=true",
                f"-Dlog4j2.configurationFile={self.root / 'log4j2.properties'}",
                "-cp", f"{kafka_libs()}/*", *args]

    def init(self) -> None:
        self.config.write_text("\n".join([
            "process.roles=broker,controller", "node.id=1",
            f"controller.quorum.voters=1@127.0.0.1:{self.controller_port}",
            f"listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names=CONTROLLER", "inter.broker.listener.name=PLAINTEXT",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            f"log.dirs={self.root / 'data'}", "num.partitions=3", "auto.create.topics.enable=true",
            "offsets.topic.replication.factor=1", "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1", "share.coordinator.state.topic.replication.factor=1",
            "offsets.topic.num.partitions=3", "transaction.state.log.num.partitions=3",
            "group.initial.rebalance.delay.ms=0", ""]))
        (self.root / "log4j2.properties").write_text(
            "status = warn\nappender.console.type = Console\nappender.console.name = console\n"
            "appender.console.layout.type = PatternLayout\n"
            "appender.console.layout.pattern = [%d] %p %m (%c)%n\n"
            "rootLogger.level = warn\nrootLogger.appenderRef.console.ref = console\n")
        cluster = subprocess.run(self._java("kafka.tools.StorageTool", "random-uuid"), check=True,
                                 capture_output=True, text=True, timeout=120).stdout.split()[-1]
        subprocess.run(self._java("kafka.tools.StorageTool", "format", "-t", cluster, "-c",
                                  str(self.config)), check=True, capture_output=True, timeout=120)
        self.start()

    def start(self, timeout: float = 120) -> None:
        self.proc = subprocess.Popen(self._java("kafka.Kafka", str(self.config)),
                                     stdout=self.log.open("a"), stderr=subprocess.STDOUT,
                                     start_new_session=True)
        wait_for(self._answers, timeout, f"the private Kafka broker on {self.bootstrap}", every=0.5)

    def kill(self) -> None:
        """SIGKILL: no controlled shutdown, as when the machine or the JVM dies."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        self.proc = None

    def _answers(self) -> bool:
        assert self.proc is not None and self.proc.poll() is None, self.log.read_text()[-3000:]
        from kafka import KafkaAdminClient
        from kafka.errors import KafkaError

        try:
            admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=3000,
                                     client_id="hcp-faults")
        except KafkaError:
            return False
        try:
            return bool(admin.describe_cluster().get("brokers"))
        except KafkaError:
            return False
        finally:
            admin.close()


_LIBS: list[Path] = []


def kafka_libs() -> Path:
    """The Kafka jars, from scripts/services.sh (which assembles them the first time)."""
    if not _LIBS:
        found = subprocess.run(["bash", str(SERVICES_SH), "kafka-libs"], capture_output=True,
                               text=True, timeout=900)
        if found.returncode != 0:
            _missing(f"scripts/services.sh kafka-libs failed: {found.stderr[-1000:]}")
        _LIBS.append(Path(found.stdout.strip().splitlines()[-1]))
    return _LIBS[0]


@pytest.fixture
def private_kafka(tmp_path: Path) -> Iterator[PrivateKafka]:
    libs = kafka_libs()
    if not (libs / ".pom.sha256").exists() or shutil.which("java") is None:
        _missing(f"no Kafka jars under {libs} or no java (run scripts/services.sh up)")
    root = tmp_path / "kafka"
    root.mkdir()
    broker = PrivateKafka(root, free_port(), free_port())
    try:
        broker.init()
        yield broker
    finally:
        broker.kill()
