"""`hcp evaluator` processes against real Kafka and PostgreSQL, as an operator runs them.

The history re-evaluation of each contract version is finished before the conversations
are written, so every reward checked here comes from the live consumer path: a subject
lost to a crash or a rebalance would stay missing, and a duplicate would break the count.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from sqlalchemy import select

from evaluators.reevaluation import Reevaluations
from evaluators.rewards import RewardStore
from evaluators.tables import reward_records as rr
from events.checkpoints import Checkpoints
from events.kafka_io import KafkaPublisher, ensure_topics, make_producer
from events.relay import EventsFeed, RelayLoop
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.unit.evaluators.factories import contract_text, conversation, publish

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.slow]
BIN = Path(sys.executable).parent
PARTITIONS = 4


@pytest.fixture
def container(postgres_url: str, kafka_bootstrap: str) -> Iterator[Container]:
    settings = Settings(database_url=postgres_url, kafka_bootstrap=kafka_bootstrap,
                        topic_prefix=f"e{uuid.uuid4().hex[:8]}")
    built = Container(settings, make_engine(postgres_url))
    ensure_topics(kafka_bootstrap, [settings.events_topic], partitions=PARTITIONS)
    publish_turn_and_episode_contracts(built)
    yield built
    built.close()


def publish_turn_and_episode_contracts(built: Container) -> None:
    """default@1 scores turns, episodes@1 episodes; each one's re-evaluation run at once."""
    for name, subject in (("default", "turn"), ("episodes", "episode")):
        publish(built.contracts, contract_text(name=name, subject=subject), name=name)
        jobs = Reevaluations(built.engine, built.store, built.contracts, RewardStore(built.engine))
        jobs.run(jobs.start(name, 1).job_id)


class Worker:
    def __init__(self, container: Container, group: str, log: Path, *args: str) -> None:
        settings = container.settings
        env = {**os.environ, "HCP_DATABASE_URL": settings.database_url,
               "HCP_KAFKA_BOOTSTRAP": settings.kafka_bootstrap, "HCP_TOPIC_PREFIX": settings.topic_prefix}
        self.log = log
        self.out: IO[str] = log.open("a")
        command = [str(BIN / "hcp"), "evaluator", "--group", group, "--session-timeout", "6", *args]
        self.process = subprocess.Popen(command,
                                        env=env, stdout=self.out, stderr=subprocess.STDOUT, text=True)

    def stop(self) -> str:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(30)
        self.out.close()
        assert self.process.returncode == 0, self.log.read_text()
        return self.log.read_text()

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)
        self.out.close()


def write_and_relay(container: Container, conversations: int) -> int:
    """``conversations`` two-turn conversations, relayed; returns the rewards they are due."""
    for _ in range(conversations):
        conversation(container.store, turns=2)
    publisher = KafkaPublisher(make_producer(container.settings.kafka_bootstrap))
    try:
        RelayLoop([EventsFeed(container.store, container.settings.events_topic)], publisher,
                  Checkpoints(container.engine)).drain()
    finally:
        publisher.close()
    return conversations * 3  # two turns under default@1, one episode under episodes@1


def stored(container: Container) -> list[tuple[int, str, str, int]]:
    with container.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(  # type: ignore[misc]
            select(rr.c.position, rr.c.subject_id, rr.c.contract_name, rr.c.contract_version)
            .order_by(rr.c.position))]


def wait_for(condition: Callable[[], bool], timeout: float = 60.0, every: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(every)


def members(bootstrap: str, group: str) -> int:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        info = admin.describe_groups([group])[group]
    finally:
        admin.close()
    return len(info["members"]) if info["group_state"] == "Stable" else 0


def assert_exactly_once(container: Container, due: int) -> None:
    rows = stored(container)
    assert len(rows) == due, f"{len(rows)} rewards, {due} due"
    assert [r[0] for r in rows] == list(range(1, due + 1))  # positions gapless
    assert len({r[1:] for r in rows}) == due  # one per (subject, contract version)


def committed_to_the_end(container: Container, group: str) -> bool:
    topic = container.settings.events_topic
    consumer = KafkaConsumer(bootstrap_servers=container.settings.kafka_bootstrap, group_id=group,
                             enable_auto_commit=False)
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        ends = consumer.end_offsets(tps)
        return all((consumer.committed(tp) or 0) == ends[tp] for tp in tps)
    finally:
        consumer.close()


def test_two_evaluators_in_one_group_write_one_reward_per_subject_and_version(
        container: Container, tmp_path: Path) -> None:
    bootstrap = container.settings.kafka_bootstrap
    first = Worker(container, "evaluators", tmp_path / "first.log", "--batch-size", "40")
    due = write_and_relay(container, 60)
    wait_for(lambda: len(stored(container)) > 0)
    second = Worker(container, "evaluators", tmp_path / "second.log", "--batch-size", "40")
    wait_for(lambda: members(bootstrap, "evaluators") == 2, every=0.5)  # rebalanced mid-stream
    due += write_and_relay(container, 120)

    wait_for(lambda: len(stored(container)) >= due)
    wait_for(lambda: committed_to_the_end(container, "evaluators"), every=0.5)
    time.sleep(1.0)  # anything extra would show up now
    outputs = first.stop(), second.stop()

    assert_exactly_once(container, due)
    assert all("scored" in output for output in outputs), outputs


def test_an_evaluator_killed_mid_batch_and_restarted_loses_and_duplicates_nothing(
        container: Container, tmp_path: Path) -> None:
    due = write_and_relay(container, 300)
    log = tmp_path / "worker.log"
    for share in (4, 2):  # killed twice, at random points of a batch: scoring, storing, committing
        worker = Worker(container, "evaluators", log, "--batch-size", "50")
        wait_for(lambda share=share: len(stored(container)) >= due // share, every=0.01)
        worker.kill()
        assert len(stored(container)) < due, "the evaluator finished before it could be killed"

    restarted = Worker(container, "evaluators", log, "--batch-size", "50")
    wait_for(lambda: len(stored(container)) >= due)
    wait_for(lambda: committed_to_the_end(container, "evaluators"), every=0.5)
    time.sleep(1.0)
    restarted.stop()

    assert_exactly_once(container, due)
