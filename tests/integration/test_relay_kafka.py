"""The outbox relay: what reaches Kafka is the database log, per stream in order, even
across a SIGKILL; a failed publish never moves the checkpoint."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence

import pytest
from sqlalchemy.engine import Engine

from events.checkpoints import Checkpoints
from events.kafka_io import PublishFailed, ensure_topics
from events.kafka_producers import PRODUCER_KINDS, make_publisher
from events.relay import EventsFeed, OutboxMessage, RelayLoop, TableFeed, checkpoint_name
from events.sql_store import SqlEventStore
from events.tables import events as events_table
from kernel.db import make_engine
from tests.integration.conftest import append_many, first_occurrences, read_topic


class MemoryPublisher:
    def __init__(self, fail: bool = False) -> None:
        self.sent: dict[str, list[OutboxMessage]] = {}
        self.fail = fail

    def publish(self, topic: str, messages: Sequence[OutboxMessage]) -> None:
        if self.fail:
            raise PublishFailed("broker unreachable")
        self.sent.setdefault(topic, []).extend(messages)


@pytest.fixture(params=PRODUCER_KINDS)
def producer(request: pytest.FixtureRequest) -> str:
    """Every relay test against Kafka runs once per producer (HCP_KAFKA_PRODUCER)."""
    return str(request.param)


@pytest.fixture
def cli_producer(producer: str) -> str:
    """The producer `hcp relay` is told to use (HCP_KAFKA_PRODUCER)."""
    return producer


class OneMessageFeed:
    wake = ""

    def __init__(self, topic: str, value: bytes) -> None:
        self.topic, self.value = topic, value

    def read_after(self, position: int, limit: int, conn: object = None) -> list[OutboxMessage]:
        return [OutboxMessage(1, b"k", self.value)] if position < 1 else []


def relay_process(database_url: str, bootstrap: str, prefix: str, *args: str,
                  producer: str = "kafka-python") -> subprocess.Popen[str]:
    env = {**os.environ, "HCP_DATABASE_URL": database_url, "HCP_KAFKA_BOOTSTRAP": bootstrap,
           "HCP_TOPIC_PREFIX": prefix, "HCP_KAFKA_PRODUCER": producer}
    return subprocess.Popen([sys.executable, "-m", "cli.main", "relay", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_for(condition, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def assert_topic_holds_the_log(bootstrap: str, topic: str, store: SqlEventStore) -> None:
    log = [e.to_json() for e in store.iter_all(raw=True)]
    records = read_topic(bootstrap, topic, expect=len(log))
    values = [json.loads(r.value) for r in records]
    assert {v["event_id"] for v in values} == {e["event_id"] for e in log}, "an event is missing"
    published = first_occurrences(values)
    for stream, events in first_occurrences(log).items():
        assert published[stream] == events, f"stream {stream} out of order or altered"
    for record, value in zip(records, values, strict=True):
        assert record.key == value["stream_id"].encode()
        assert dict(record.headers) == {"type": value["type"].encode(),
                                        "schema_version": str(value["schema_version"]).encode()}


@pytest.mark.kafka
def test_what_the_relay_publishes_equals_the_log(postgres_url: str, kafka_bootstrap: str,
                                                 topic_prefix: str, producer: str) -> None:
    engine = make_engine(postgres_url)
    store, topic = SqlEventStore(engine), f"{topic_prefix}.events"
    append_many(store, streams=7, per_stream=30, batch=40)
    ensure_topics(kafka_bootstrap, [topic])
    publisher = make_publisher(producer, kafka_bootstrap)
    loop = RelayLoop([EventsFeed(store, topic)], publisher, Checkpoints(engine), page_size=64)

    [progress] = loop.drain()

    assert (progress.published, progress.position) == (210, 210)
    assert Checkpoints(engine).load(checkpoint_name(topic)) == 210
    assert_topic_holds_the_log(kafka_bootstrap, topic, store)
    assert len(read_topic(kafka_bootstrap, topic)) == 210  # no crash, so no duplicates
    publisher.close()
    engine.dispose()


@pytest.mark.kafka
def test_sigkill_mid_stream_then_restart_loses_nothing(postgres_url: str, kafka_bootstrap: str,
                                                       topic_prefix: str, cli_producer: str) -> None:
    engine = make_engine(postgres_url)
    store, checkpoints = SqlEventStore(engine), Checkpoints(engine)
    name = checkpoint_name(f"{topic_prefix}.events")
    append_many(store, streams=10, per_stream=100, batch=50)
    writing = threading.Event()
    writing.set()

    def keep_writing() -> None:  # events keep committing while the relay dies and restarts
        while writing.is_set():
            append_many(store, streams=3, per_stream=5, batch=15)

    writer = threading.Thread(target=keep_writing)
    writer.start()
    try:
        relay = relay_process(postgres_url, kafka_bootstrap, topic_prefix, "--page-size", "50",
                              producer=cli_producer)
        wait_for(lambda: checkpoints.load(name) >= 300)
        relay.send_signal(signal.SIGKILL)
        relay.wait(10)
        killed_at = checkpoints.load(name)
        assert killed_at < store.head(), "the relay was not mid-stream when killed"

        relay = relay_process(postgres_url, kafka_bootstrap, topic_prefix, "--page-size", "50",
                              producer=cli_producer)
        wait_for(lambda: checkpoints.load(name) > killed_at)
    finally:
        writing.clear()
        writer.join()
    wait_for(lambda: checkpoints.load(name) == store.head())
    relay.terminate()
    output, _ = relay.communicate(timeout=20)
    assert relay.returncode == 0, output
    assert "stopped" in output

    assert_topic_holds_the_log(kafka_bootstrap, f"{topic_prefix}.events", store)
    engine.dispose()


@pytest.mark.kafka
def test_relay_once_publishes_what_is_committed_and_exits(postgres_url: str, kafka_bootstrap: str,
                                                          topic_prefix: str, cli_producer: str) -> None:
    engine = make_engine(postgres_url)
    store = SqlEventStore(engine)
    append_many(store, streams=2, per_stream=5)

    relay = relay_process(postgres_url, kafka_bootstrap, topic_prefix, "--once", producer=cli_producer)
    output, _ = relay.communicate(timeout=60)

    assert relay.returncode == 0, output
    assert f"published 10 to {topic_prefix}.events, at position 10" in output
    assert_topic_holds_the_log(kafka_bootstrap, f"{topic_prefix}.events", store)
    engine.dispose()


@pytest.mark.kafka
def test_a_message_the_broker_refuses_fails_the_page_and_keeps_the_checkpoint(
        sqlite_url: str, kafka_bootstrap: str, topic_prefix: str, producer: str) -> None:
    engine = make_engine(sqlite_url)
    topic = f"{topic_prefix}.events"
    ensure_topics(kafka_bootstrap, [topic])
    # The client lets 2 MB through; the broker (1 MB message.max.bytes) refuses it, so
    # the failure comes back in the delivery report, not from the local send.
    big = {"confluent-kafka": {"message.max.bytes": 8_000_000},
           "kafka-python": {"max_request_size": 8_000_000}}[producer]
    publisher = make_publisher(producer, kafka_bootstrap, **big)
    loop = RelayLoop([OneMessageFeed(topic, b"x" * 2_000_000)], publisher, Checkpoints(engine))

    with pytest.raises(PublishFailed):
        loop.step()
    assert Checkpoints(engine).load(checkpoint_name(topic)) == 0

    loop.feeds = [OneMessageFeed(topic, b"small enough")]  # the same publisher carries on
    [progress] = loop.step()
    assert (progress.published, progress.position) == (1, 1)
    assert [r.value for r in read_topic(kafka_bootstrap, topic, expect=1)] == [b"small enough"]
    publisher.close()
    engine.dispose()


def test_an_unknown_producer_is_refused() -> None:
    with pytest.raises(ValueError, match="confluent-kafka, kafka-python"):
        make_publisher("kafka-rust", "127.0.0.1:9")


def test_a_failed_publish_leaves_the_checkpoint_where_it_was(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    store = SqlEventStore(engine)
    append_many(store, streams=1, per_stream=5)
    failing = RelayLoop([EventsFeed(store, "t.events")], MemoryPublisher(fail=True),
                        Checkpoints(engine))

    with pytest.raises(PublishFailed):
        failing.step()
    assert Checkpoints(engine).load(checkpoint_name("t.events")) == 0

    working = MemoryPublisher()
    RelayLoop([EventsFeed(store, "t.events")], working, Checkpoints(engine)).drain()
    assert [m.position for m in working.sent["t.events"]] == [1, 2, 3, 4, 5]
    engine.dispose()


def test_run_retries_after_a_failure_and_stops_when_asked(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    store = SqlEventStore(engine)
    append_many(store, streams=1, per_stream=3)
    publisher = MemoryPublisher(fail=True)
    loop = RelayLoop([EventsFeed(store, "t.events")], publisher, Checkpoints(engine),
                     idle_interval=0.01, max_backoff=0.05)
    stop = threading.Event()
    runner = threading.Thread(target=loop.run, args=(stop,))
    runner.start()
    time.sleep(0.2)
    publisher.fail = False
    wait_for(lambda: len(publisher.sent.get("t.events", [])) == 3, timeout=5)
    append_many(store, streams=1, per_stream=2)  # a live tail picks up later commits
    wait_for(lambda: len(publisher.sent["t.events"]) == 5, timeout=5)
    stop.set()
    runner.join(5)
    assert not runner.is_alive()
    engine.dispose()


def test_each_feed_has_its_own_topic_and_checkpoint(engine: Engine) -> None:
    store = SqlEventStore(engine)
    append_many(store, streams=2, per_stream=3)
    second = TableFeed(engine, events_table, "position", "t.audit",
                       lambda row: OutboxMessage(row["position"], b"k", row["hash"].encode()))
    publisher = MemoryPublisher()
    loop = RelayLoop([EventsFeed(store, "t.events"), second], publisher, Checkpoints(engine),
                     page_size=4)

    progress = loop.drain()

    assert [(p.topic, p.published, p.position) for p in progress] == [
        ("t.events", 6, 6), ("t.audit", 6, 6)]
    assert [m.value.decode() for m in publisher.sent["t.audit"]] == [
        e.hash for e in store.read_all()]


class CountingStop(threading.Event):
    """A stop event that records the loop's idle waits and stops it after ``steps`` waits."""

    def __init__(self, steps: int) -> None:
        super().__init__()
        self.waits, self.steps = 0, steps

    def wait(self, timeout: float | None = None) -> bool:
        self.waits += 1
        if self.waits >= self.steps:
            self.set()
        return self.is_set()


class TrickleFeed:
    """Two short pages in a row, then nothing: events that commit while a page is in flight."""

    topic, wake = "t.events", ""

    def __init__(self) -> None:
        self.pages = [[OutboxMessage(1, b"k", b"a")], [OutboxMessage(2, b"k", b"b")]]

    def read_after(self, position: int, limit: int, conn: object = None) -> list[OutboxMessage]:
        return self.pages.pop(0) if self.pages else []


def test_the_loop_sleeps_only_when_there_was_nothing_to_publish(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    publisher, stop = MemoryPublisher(), CountingStop(steps=1)
    RelayLoop([TrickleFeed()], publisher, Checkpoints(engine)).run(stop)

    assert [m.value for m in publisher.sent["t.events"]] == [b"a", b"b"]  # back to back
    assert stop.waits == 1  # the one wait came after the empty read
    engine.dispose()
