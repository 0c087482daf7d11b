"""The evaluator as a Kafka consumer-group member, and its rewards relayed to <prefix>.rewards."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from evaluators.outbox import rewards_table_feed
from evaluators.reevaluation import Reevaluations
from evaluators.rewards import RewardQuery, RewardStore
from events.checkpoints import Checkpoints
from events.feed import KafkaLogReader
from events.kafka_io import KafkaPublisher, ensure_topics, make_producer
from events.relay import EventsFeed, RelayLoop
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.integration.conftest import read_topic
from tests.unit.evaluators.factories import contract_text, conversation, publish

pytestmark = pytest.mark.kafka


@pytest.fixture
def container(postgres_url: str, kafka_bootstrap: str, topic_prefix: str) -> Iterator[Container]:
    settings = Settings(database_url=postgres_url, kafka_bootstrap=kafka_bootstrap,
                        topic_prefix=topic_prefix)
    built = Container(settings, make_engine(postgres_url))
    yield built
    built.close()


def relay(container: Container) -> None:
    settings = container.settings
    feeds = [EventsFeed(container.store, settings.events_topic),
             rewards_table_feed(container.engine, settings.rewards_topic)]
    ensure_topics(settings.kafka_bootstrap, [f.topic for f in feeds], partitions=3)
    publisher = KafkaPublisher(make_producer(settings.kafka_bootstrap))
    try:
        RelayLoop(feeds, publisher, Checkpoints(container.engine)).drain()
    finally:
        publisher.close()


def test_rewards_from_the_events_topic_reach_the_rewards_topic_once_each(container: Container) -> None:
    settings = container.settings
    publish(container.contracts, contract_text())
    streams = [conversation(container.store, turns=2) for _ in range(6)]
    relay(container)
    reader = KafkaLogReader(settings.kafka_bootstrap, settings.events_topic, "evaluator")
    worker = container.evaluator(reader=reader)
    try:
        totals = worker.drain(timeout=60)
    finally:
        reader.close()
    assert totals.rewards == 12
    relay(container)

    records = read_topic(settings.kafka_bootstrap, settings.rewards_topic, expect=12)
    stored = {str(r.reward_id): r for r in RewardStore(container.engine).find(RewardQuery(limit=100))}
    assert len(records) == 12
    for record in records:
        value = json.loads(record.value)
        assert record.key == value["subject"]["stream_id"].encode()
        assert value == stored[value["reward_id"]].to_json()
    assert {json.loads(r.value)["subject"]["stream_id"] for r in records} == set(streams)


def test_a_restarted_group_member_resumes_after_its_committed_offsets(container: Container) -> None:
    settings = container.settings
    publish(container.contracts, contract_text())
    jobs = Reevaluations(container.engine, container.store, container.contracts,
                         RewardStore(container.engine))
    jobs.run(jobs.start("default", 1).job_id)  # history before the conversations: nothing
    conversation(container.store, turns=1)
    relay(container)
    first = KafkaLogReader(settings.kafka_bootstrap, settings.events_topic, "evaluator")
    try:
        assert container.evaluator(reader=first).drain(timeout=60).rewards == 1
    finally:
        first.close()
    conversation(container.store, turns=1)
    relay(container)

    second = KafkaLogReader(settings.kafka_bootstrap, settings.events_topic, "evaluator")
    try:
        totals = container.evaluator(reader=second).drain(timeout=60)
    finally:
        second.close()

    assert (totals.events, totals.rewards) == (5, 1)  # only the new conversation's events
