"""`hcp evaluator --processes N` on the database log (no Kafka) with real PostgreSQL, as an
operator runs it: one of its processes killed mid-batch, the command restarted with
another number of processes, and every subject still scored exactly once.

The history re-evaluation of each contract version is finished before the conversations
are written, so in the first test every reward comes from the processes' own shares; in
the second, a version published while they run has its history shared between them.
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
from tests.unit.evaluators.factories import contract_text, conversation, publish

pytestmark = [pytest.mark.postgres, pytest.mark.slow]
BIN = Path(sys.executable).parent


@pytest.fixture
def container(postgres_url: str) -> Iterator[Container]:
    built = Container(Settings(database_url=postgres_url, kafka_bootstrap=""), make_engine(postgres_url))
    publish_turn_and_episode_contracts(built)
    yield built
    built.close()


def start(container: Container, log: Path, processes: int,
          chunk_positions: int = 2000) -> subprocess.Popen[str]:
    env = {**os.environ, "HCP_DATABASE_URL": container.settings.database_url, "HCP_KAFKA_BOOTSTRAP": "",
           "HCP_REEVALUATION_CHUNK_POSITIONS": str(chunk_positions)}
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


def test_a_reevaluation_shared_by_the_processes_survives_one_killed_mid_job(
        container: Container, tmp_path: Path) -> None:
    """Publishing a version while `--processes 2` runs: both score chunks of its history
    (one chunk claim each at a time), one is SIGKILLed mid-job, and the restarted command
    finishes the job with every subject scored once under the new version."""
    for _ in range(300):
        conversation(container.store, turns=2)
    live = 300 * 3
    log = tmp_path / "evaluator.log"
    command = start(container, log, 2, chunk_positions=40)
    wait_for(lambda: len(stored(container)) >= live)

    publish(container.contracts, contract_text(answered_weight=3.0), parent=1)
    jobs = container.reevaluations
    wait_for(lambda: any(j.done_position >= 400 for j in jobs.jobs("default", 2)), every=0.01)
    os.kill(children_of(command.pid)[1], signal.SIGKILL)  # mid-job: one process with its claims
    assert command.wait(30) != 0, log.read_text()
    [job] = jobs.jobs("default", 2)
    assert job.status == "running", "the job finished before a process could be killed"

    restarted = start(container, log, 2, chunk_positions=40)
    wait_for(lambda: jobs.jobs("default", 2)[0].status != "running")
    restarted.send_signal(signal.SIGTERM)
    assert restarted.wait(30) == 0, log.read_text()

    [done] = jobs.jobs("default", 2)
    assert (done.status, done.subjects_scored, done.done_position) == ("succeeded", 600, done.to_position)
    assert_exactly_once(container, live + 600)  # the 600 turns again, under default@2
