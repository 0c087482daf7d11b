"""`hcp evaluator --processes N` on the database log (no Kafka) with real PostgreSQL, as an
operator runs it: one of its processes killed mid-batch, the command restarted with
another number of processes, and every subject still scored exactly once.

The history re-evaluation of each contract version is finished before the conversations
are written, so every reward checked here comes from the processes' own shares.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from events.checkpoints import Checkpoints
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.e2e.test_evaluator_processes import (
    assert_exactly_once,
    publish_turn_and_episode_contracts,
    stored,
    wait_for,
)
from tests.processes import children_of
from tests.unit.evaluators.factories import conversation

pytestmark = [pytest.mark.postgres, pytest.mark.slow]
BIN = Path(sys.executable).parent


@pytest.fixture
def container(postgres_url: str) -> Iterator[Container]:
    built = Container(Settings(database_url=postgres_url, kafka_bootstrap=""), make_engine(postgres_url))
    publish_turn_and_episode_contracts(built)
    yield built
    built.close()


def start(container: Container, log: Path, processes: int) -> subprocess.Popen[str]:
    env = {**os.environ, "HCP_DATABASE_URL": container.settings.database_url, "HCP_KAFKA_BOOTSTRAP": ""}
    return subprocess.Popen([str(BIN / "hcp"), "evaluator", "--processes", str(processes),
                             "--batch-size", "50"], env=env, stdout=log.open("a"),
                            stderr=subprocess.STDOUT, text=True)


def test_a_share_killed_mid_batch_and_a_restart_with_other_processes_lose_and_duplicate_nothing(
        container: Container, tmp_path: Path) -> None:
    for _ in range(300):
        conversation(container.store, turns=2)
    due = 300 * 3  # two turns under default@1, one episode under episodes@1
    log = tmp_path / "evaluator.log"

    command = start(container, log, 2)
    wait_for(lambda: len(children_of(command.pid)) == 2, every=0.01)
    wait_for(lambda: len(stored(container)) >= due // 4, every=0.01)
    os.kill(children_of(command.pid)[0], signal.SIGKILL)  # one share's process, mid-batch
    assert command.wait(30) != 0, log.read_text()  # the other was stopped with it
    assert len(stored(container)) < due, "the evaluators finished before one could be killed"

    restarted = start(container, log, 3)  # a new split: each share starts where all had read
    wait_for(lambda: len(stored(container)) >= due)
    head = container.store.head()
    wait_for(lambda: all(p == head for name, p in Checkpoints(container.engine)
                         .load_family("reader:evaluator").items() if name.endswith("-of-3")))
    time.sleep(1.0)  # anything extra would show up now
    restarted.send_signal(signal.SIGTERM)
    assert restarted.wait(30) == 0, log.read_text()

    assert_exactly_once(container, due)
    assert "stopped: last batch stored and committed" in log.read_text()
