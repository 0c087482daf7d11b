"""The relay's Merkle tree builder runs in a child process that never outlives the relay."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from audit.sql_nodestore import SqlNodeStore
from cli.tree_process import MODULE
from events.sql_store import SqlEventStore
from kernel.db import make_engine
from tests.integration.conftest import append_many
from tests.integration.test_relay_kafka import relay_process, wait_for
from tests.processes import children_of, gone

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def builders_of(parent: int) -> list[int]:
    """Live tree builder processes whose parent is ``parent``."""
    return children_of(parent, MODULE)


def builder_process(database_url: str, parent: int, **popen: object) -> subprocess.Popen[bytes]:
    env = {**os.environ, "HCP_DATABASE_URL": database_url}
    return subprocess.Popen([sys.executable, "-m", MODULE, str(parent)], env=env,  # type: ignore[call-overload]
                            **popen)


@linux_only
@pytest.mark.kafka
def test_a_sigkilled_relay_leaves_no_builder_and_the_next_relay_builds_on(
        postgres_url: str, kafka_bootstrap: str, topic_prefix: str) -> None:
    engine = make_engine(postgres_url)
    store, nodes = SqlEventStore(engine), SqlNodeStore(engine)
    append_many(store, streams=2, per_stream=5)
    relay = relay_process(postgres_url, kafka_bootstrap, topic_prefix)
    try:
        wait_for(lambda: nodes.tree_size() == 10, timeout=60)
        [builder] = builders_of(relay.pid)
        relay.send_signal(signal.SIGKILL)
        relay.wait(10)
        wait_for(lambda: gone(builder), timeout=10)

        append_many(store, streams=1, per_stream=7)
        relay = relay_process(postgres_url, kafka_bootstrap, topic_prefix)
        wait_for(lambda: nodes.tree_size() == 17, timeout=60)
        [builder] = builders_of(relay.pid)
    finally:
        relay.send_signal(signal.SIGTERM)
        output, _ = relay.communicate(timeout=60)
    assert relay.returncode == 0, output
    assert gone(builder), "a cleanly stopped relay left its builder running"
    engine.dispose()


def test_the_builder_follows_until_its_pipe_closes(database_url: str) -> None:
    """The portable backstop: end of file on the pipe from the relay stops the builder."""
    engine = make_engine(database_url)
    store, nodes = SqlEventStore(engine), SqlNodeStore(engine)
    append_many(store, streams=2, per_stream=3)
    builder = builder_process(database_url, os.getpid(), stdin=subprocess.PIPE)
    try:
        wait_for(lambda: nodes.tree_size() == 6, timeout=60)
        append_many(store, streams=1, per_stream=4)
        wait_for(lambda: nodes.tree_size() == 10, timeout=60)
    finally:
        assert builder.stdin is not None
        builder.stdin.close()
    assert builder.wait(30) == 0
    engine.dispose()


def test_a_builder_whose_parent_is_already_gone_exits(sqlite_url: str) -> None:
    # The relay died before the child armed its death signal: the child's parent is not
    # the pid it was given, and it exits at once.
    builder = builder_process(sqlite_url, 1, stdin=subprocess.PIPE)
    assert builder.wait(30) == 0


@linux_only
def test_the_builder_dies_with_its_parent_even_while_the_pipe_stays_open(sqlite_url: str) -> None:
    """PR_SET_PDEATHSIG: the parent is SIGKILLed while someone else still holds the pipe."""
    engine = make_engine(sqlite_url)
    append_many(SqlEventStore(engine), streams=1, per_stream=3)
    spawn = ("import os, subprocess, sys, time; "
             f"p = subprocess.Popen([sys.executable, '-m', '{MODULE}', str(os.getpid())]); "
             "print(p.pid, flush=True); time.sleep(600)")
    parent = subprocess.Popen([sys.executable, "-c", spawn], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, env={**os.environ, "HCP_DATABASE_URL": sqlite_url})
    try:
        assert parent.stdout is not None
        builder = int(parent.stdout.readline())
        wait_for(lambda: SqlNodeStore(engine).tree_size() == 3, timeout=60)
        parent.kill()
        parent.wait(10)
        wait_for(lambda: gone(builder), timeout=10)  # this test still holds the pipe open
    finally:
        assert parent.stdin is not None
        parent.stdin.close()
    engine.dispose()
