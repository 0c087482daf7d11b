"""The Kafka broker dies (kill -9) for a minute while events keep arriving: `hcp relay` and
`hcp evaluator` ride it out and, once it is back, every subject gets its reward, none twice,
with nothing restarted by hand.

Before, the evaluator exited at its next offset commit (`KafkaConnectionError` from
`consumer.commit`, where only `CommitFailedError` was caught): 3,076 of 4,364 episodes
got no reward until someone restarted it. Whether a kill lands between a batch's rewards
and its commit is chance in the first test; the second kills the broker exactly there.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

from evaluators.tables import reward_records
from events.feed import KafkaLogReader
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.faults.conftest import PrivateKafka, wait_for
from tests.faults.test_postgres_restart import conversation
from tests.integration.test_evaluator_kafka import relay
from tests.unit.evaluators.factories import contract_text, publish

pytestmark = [pytest.mark.postgres, pytest.mark.kafka, pytest.mark.slow]
BIN = Path(sys.executable).parent
DOWN_S = 60.0
TURNS = 2  # per conversation, each a subject scored under the one published version
EVERY_S = 0.1  # between conversations: the evaluator is often inside a batch when the broker dies


@pytest.fixture
def stack(postgres_url: str, private_kafka: PrivateKafka, tmp_path: Path) -> Iterator[dict]:
    prefix = f"k{uuid.uuid4().hex[:8]}"
    settings = Settings(database_url=postgres_url, kafka_bootstrap=private_kafka.bootstrap,
                        topic_prefix=prefix, redis_url="", data_dir=tmp_path)
    container = Container(settings, make_engine(postgres_url))
    publish(container.contracts, contract_text())
    env = {**os.environ, "HCP_DATABASE_URL": postgres_url, "HCP_KAFKA_BOOTSTRAP": private_kafka.bootstrap,
           "HCP_TOPIC_PREFIX": prefix, "HCP_REDIS_URL": "", "HCP_DATA_DIR": str(tmp_path)}
    logs = {name: tmp_path / f"{name}.log" for name in ("relay", "evaluator")}
    procs = {"relay": start(["relay"], env, logs["relay"]),
             "evaluator": start(["evaluator", "--session-timeout", "6"], env, logs["evaluator"])}
    try:
        yield {"container": container, "procs": procs, "logs": logs}
    finally:
        for proc in procs.values():
            stop(proc)
        for name, log in logs.items():
            print(f"--- {name}\n{log.read_text()[-4000:]}")
        container.close()


def start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([str(BIN / "hcp"), *command], env=env, stdout=log.open("w"),
                            stderr=subprocess.STDOUT, start_new_session=True)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


class Traffic:
    """Conversations appended every ``every`` seconds from a thread, until ``stop``."""

    def __init__(self, container: Container, every: float = EVERY_S) -> None:
        self.container, self.every, self.sent = container, every, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.container.store.append(conversation(TURNS))
            self.sent += 1

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(30)
        return self.sent


def rewards(container: Container) -> int:
    with container.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(reward_records)).scalar() or 0)


def test_the_evaluator_rides_out_a_minute_without_the_broker(stack: dict,
                                                             private_kafka: PrivateKafka) -> None:
    container, procs = stack["container"], stack["procs"]
    traffic = Traffic(container)
    try:
        wait_for(lambda: rewards(container) >= 20, 120, "the evaluator to score the first conversations")
        private_kafka.kill()
        killed_at, scored_before = time.monotonic(), rewards(container)
        while time.monotonic() - killed_at < DOWN_S:
            assert procs["evaluator"].poll() is None, "the evaluator exited while the broker was down"
            time.sleep(1)
        sent_while_down = traffic.sent
        private_kafka.start()
        time.sleep(5)  # events keep arriving after the broker is back, too
    finally:
        sent = traffic.stop()

    wait_for(lambda: rewards(container) >= TURNS * sent, 240,
             f"a reward for every one of the {TURNS * sent} subjects", every=1.0)
    time.sleep(3)  # anything doubled would show up now
    assert procs["evaluator"].poll() is None and procs["relay"].poll() is None
    with container.engine.connect() as conn:
        positions = [r[0] for r in conn.execute(select(reward_records.c.position)
                                                .order_by(reward_records.c.position))]
        subjects = conn.execute(select(func.count(func.distinct(reward_records.c.subject_id)))).scalar()
    # Every subject once: none lost, none doubled, no gap in the reward positions.
    assert positions == list(range(1, TURNS * sent + 1))
    assert subjects == TURNS * sent
    assert sent_while_down > DOWN_S / EVERY_S / 2 and scored_before < TURNS * sent_while_down


class KillingReader(KafkaLogReader):
    """Kills the broker at its first commit of a batch, after the batch's rewards are
    stored, and has it started again ``down_s`` later; counts the commits that failed."""

    def __init__(self, broker: PrivateKafka, down_s: float, topic: str, group_id: str) -> None:
        super().__init__(broker.bootstrap, topic, group_id)
        self.broker, self.down_s, self.failed = broker, down_s, 0
        self.restarted: threading.Thread | None = None

    def commit(self) -> None:
        if self.next_offset and self.restarted is None:
            self.broker.kill()
            self.restarted = threading.Thread(target=self._start_later, daemon=True)
            self.restarted.start()
        try:
            super().commit()
        except Exception:
            self.failed += 1
            raise

    def _start_later(self) -> None:
        time.sleep(self.down_s)
        self.broker.start()


def test_a_commit_that_finds_the_broker_gone_is_made_once_it_is_back(
        postgres_url: str, private_kafka: PrivateKafka, tmp_path: Path) -> None:
    settings = Settings(database_url=postgres_url, kafka_bootstrap=private_kafka.bootstrap,
                        topic_prefix=f"k{uuid.uuid4().hex[:8]}", data_dir=tmp_path)
    container = Container(settings, make_engine(postgres_url))
    publish(container.contracts, contract_text())
    for _ in range(10):
        container.store.append(conversation(TURNS))
    relay(container)
    reader = KillingReader(private_kafka, 15.0, settings.events_topic, "evaluator")
    evaluator = container.evaluator(reader=reader)
    stop = threading.Event()
    worker = threading.Thread(target=evaluator.run, args=(stop,), kwargs={"max_backoff": 2.0}, daemon=True)
    worker.start()
    try:
        wait_for(lambda: reader.restarted is not None, 60, "the batch's commit (and the kill)")
        assert rewards(container) == TURNS * 10  # stored before the commit
        assert reader.restarted is not None
        reader.restarted.join(150)
        wait_for(lambda: not reader.next_offset, 120, "the kept offsets to be committed")
        assert worker.is_alive() and reader.failed >= 1
    finally:
        stop.set()
        worker.join(60)
        reader.close()
    assert not worker.is_alive()

    # The commit was made (not lost to a redelivery): the group resumes after the batch.
    again = KafkaLogReader(settings.kafka_bootstrap, settings.events_topic, "evaluator")
    try:
        assert sum(len(again.poll(timeout=2.0)) for _ in range(5)) == 0
    finally:
        again.close()
    assert rewards(container) == TURNS * 10
    container.close()
