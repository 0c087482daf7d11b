"""The shared LogReader suite: the database log (SQLite, PostgreSQL) and Kafka behave alike."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from sqlalchemy.engine import Engine

from events.checkpoints import Checkpoints
from events.feed import DatabaseLogReader, KafkaLogReader, LogReader
from events.kafka_io import KafkaPublisher, ensure_topics, make_producer
from events.model import NewEvent, RecordedEvent
from events.relay import EventsFeed, RelayLoop
from events.sql_store import SqlEventStore
from kernel.db import make_engine
from tests.integration.conftest import append_many


@dataclass
class Log:
    """A log to write to, and how to open a reader on it."""

    store: SqlEventStore
    engine: Engine
    bootstrap: str = ""
    topic: str = ""
    readers: list[LogReader[RecordedEvent]] = field(default_factory=list)

    def append(self, events: list[NewEvent] | None = None, streams: int = 3,
               per_stream: int = 4) -> list[RecordedEvent]:
        if events is None:
            written = append_many(self.store, streams, per_stream, batch=5)
        else:
            written = [a.event for a in self.store.append(events)]
        if self.bootstrap:  # what Kafka readers see is what the relay published
            publisher = KafkaPublisher(make_producer(self.bootstrap))
            RelayLoop([EventsFeed(self.store, self.topic)], publisher,
                      Checkpoints(self.engine)).drain()
            publisher.close()
        return written

    def reader(self, name: str) -> LogReader[RecordedEvent]:
        reader: LogReader[RecordedEvent]
        if self.bootstrap:
            reader = KafkaLogReader(self.bootstrap, self.topic, name)
        else:
            reader = DatabaseLogReader(self.engine, self.store, name)
        self.readers.append(reader)
        return reader


@pytest.fixture(params=["database-sqlite", "database-postgres",
                        pytest.param("kafka", marks=pytest.mark.kafka)])
def log(request: pytest.FixtureRequest, topic_prefix: str) -> Iterator[Log]:
    kind, _, backend = request.param.partition("-")
    url = request.getfixturevalue(f"{backend or 'postgres'}_url")
    engine = make_engine(url)
    the_log = Log(SqlEventStore(engine), engine)
    if kind == "kafka":
        the_log.bootstrap = request.getfixturevalue("kafka_bootstrap")
        the_log.topic = f"{topic_prefix}.events"
        ensure_topics(the_log.bootstrap, [the_log.topic])
    yield the_log
    for reader in the_log.readers:
        reader.close()
    engine.dispose()


def poll_until(reader: LogReader[RecordedEvent], count: int, timeout: float = 20.0) -> list[RecordedEvent]:
    """Poll until ``count`` records came (Kafka may first need to join its group)."""
    got: list[RecordedEvent] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        got += reader.poll(max_records=7, timeout=0.5)
    return got


def by_stream(events: list[RecordedEvent]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for e in events:
        out.setdefault(e.stream_id, []).append(e.to_json())
    return out


def test_poll_returns_every_event_in_stream_order(log: Log) -> None:
    written = log.append(streams=3, per_stream=5)

    got = poll_until(log.reader("worker"), len(written))

    assert len(got) == len(written)
    assert by_stream(got) == by_stream(written)  # same documented JSON, stream_seq order


def test_a_reopened_reader_resumes_after_its_commit(log: Log) -> None:
    first = log.append(streams=2, per_stream=3)
    reader = log.reader("worker")
    assert len(poll_until(reader, len(first))) == len(first)
    reader.commit()
    reader.close()

    later = log.append(streams=1, per_stream=2)
    again = poll_until(log.reader("worker"), len(later))

    assert [e.event_id for e in again] == [e.event_id for e in later]


def test_what_was_polled_but_not_committed_comes_again(log: Log) -> None:
    written = log.append(streams=2, per_stream=3)
    reader = log.reader("worker")
    assert len(poll_until(reader, len(written))) == len(written)
    reader.close()  # a crash before the results were durable

    again = poll_until(log.reader("worker"), len(written))
    assert {e.event_id for e in again} == {e.event_id for e in written}


def test_rewind_hands_out_the_uncommitted_records_again(log: Log) -> None:
    committed = log.append(streams=1, per_stream=2)
    reader = log.reader("worker")
    assert len(poll_until(reader, 2)) == 2
    reader.commit()
    pending = log.append(streams=2, per_stream=2)
    assert len(poll_until(reader, 4)) == 4

    reader.rewind()

    again = poll_until(reader, 4)
    assert {e.event_id for e in again} == {e.event_id for e in pending}
    assert not {e.event_id for e in again} & {e.event_id for e in committed}


def test_readers_with_different_names_are_independent(log: Log) -> None:
    written = log.append(streams=1, per_stream=3)
    one = log.reader("evaluator")
    assert len(poll_until(one, 3)) == 3
    one.commit()

    assert len(poll_until(log.reader("auditor"), 3)) == len(written)


def test_poll_on_a_quiet_log_returns_nothing_after_its_timeout(log: Log) -> None:
    log.append(streams=1, per_stream=1)
    reader = log.reader("worker")
    assert len(poll_until(reader, 1)) == 1

    started = time.monotonic()
    assert reader.poll(timeout=0.3) == []
    assert time.monotonic() - started < 3


def test_old_payload_versions_arrive_upcast(log: Log) -> None:
    log.append([NewEvent(stream_id="s", type="feedback.given", schema_version=1,
                         payload={"thumbs_up": False})])

    [event] = poll_until(log.reader("worker"), 1)

    assert (event.schema_version, event.payload) == (2, {"thumbs": "down"})


def test_checkpoints_load_many_reads_each_name_as_load_does(engine: Engine) -> None:
    checkpoints = Checkpoints(engine)
    checkpoints.save("relay:a", 7)
    checkpoints.save("relay:b", 3)
    checkpoints.save("relay:b", 9)
    names = ["relay:b", "relay:none", "relay:a"]
    assert checkpoints.load_many(names) == {"relay:b": 9, "relay:none": 0, "relay:a": 7}
    assert checkpoints.load_many(names) == {name: checkpoints.load(name) for name in names}
