"""Fixtures and helpers for the event-log integration tests: stores, topics, event factories."""

from __future__ import annotations

import time
import uuid

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.consumer.fetcher import ConsumerRecord
from sqlalchemy.engine import Engine

from events.model import NewEvent, RecordedEvent
from events.sql_store import SqlEventStore


@pytest.fixture
def store(engine: Engine) -> SqlEventStore:
    return SqlEventStore(engine)


@pytest.fixture
def topic_prefix() -> str:
    """A fresh prefix per test, so tests sharing the broker never see each other's topics."""
    return f"t{uuid.uuid4().hex[:8]}"


def new_event(stream_id: str | None = None, text: str = "hello", **kwargs: object) -> NewEvent:
    return NewEvent(stream_id=stream_id or f"s-{uuid.uuid4().hex[:8]}", type="turn.user",
                    payload={"text": text}, **kwargs)  # type: ignore[arg-type]


def append_many(store: SqlEventStore, streams: int, per_stream: int, batch: int = 50) -> list[RecordedEvent]:
    """Interleave ``streams`` streams, ``per_stream`` events each, in batches."""
    names = [f"s-{uuid.uuid4().hex[:8]}" for _ in range(streams)]
    items = [new_event(names[i % streams], f"e{i}") for i in range(streams * per_stream)]
    out: list[RecordedEvent] = []
    for start in range(0, len(items), batch):
        out += [a.event for a in store.append(items[start:start + batch])]
    return out


def read_topic(bootstrap: str, topic: str, expect: int = 0, timeout: float = 30.0) -> list[ConsumerRecord]:
    """Every record of ``topic`` from the beginning, partition by partition in offset order.

    Reads without a group up to the end offsets; waits (up to ``timeout``) until at
    least ``expect`` records exist, so a test can ask for what it has just published.
    """
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        deadline = time.monotonic() + timeout
        while True:
            partitions = consumer.partitions_for_topic(topic) or set()
            tps = [TopicPartition(topic, p) for p in sorted(partitions)]
            ends = consumer.end_offsets(tps) if tps else {}
            if sum(ends.values()) >= expect or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        records: dict[TopicPartition, list[ConsumerRecord]] = {tp: [] for tp in tps}
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            for tp, batch in consumer.poll(timeout_ms=500).items():
                records[tp].extend(r for r in batch if r.offset < ends[tp])
        return [r for tp in tps for r in records[tp]]
    finally:
        consumer.close()


def first_occurrences(values: list[dict]) -> dict[str, list[dict]]:
    """Per stream, events in the order they first appeared (duplicates dropped)."""
    seen: set[str] = set()
    per_stream: dict[str, list[dict]] = {}
    for value in values:
        if value["event_id"] in seen:
            continue
        seen.add(value["event_id"])
        per_stream.setdefault(value["stream_id"], []).append(value)
    return per_stream

