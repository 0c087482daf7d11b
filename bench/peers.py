"""The peers the ingest benchmark measures in the same run: what a user would otherwise pick.

* pyeventsourcing (the `eventsourcing` package) with PostgreSQL: its ``Application`` saving
  aggregates (one transaction per batch), and its ``PostgresApplicationRecorder`` fed
  ``StoredEvent`` rows directly (pipelined executemany under a table lock);
* bare Kafka producers, confluent-kafka (librdkafka) and kafka-python, sending the same
  messages with acks=all and waiting for every acknowledgement;
* ``COPY`` into a bare table with the events table's columns: the physical ceiling.

Each function returns events (or messages, rows) per second of its timed part only.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from typing import Any

import psycopg
from confluent_kafka import Producer
from eventsourcing.application import Application
from eventsourcing.domain import Aggregate, event
from eventsourcing.persistence import StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore
from kafka import KafkaProducer
from sqlalchemy.engine import make_url

EventDict = dict[str, Any]  # one item of a POST /v1/events body


# --- pyeventsourcing ----------------------------------------------------------------


class Session(Aggregate):
    """One stream of the benchmark as an eventsourcing aggregate."""

    @event("Recorded")
    def record(self, kind: str, payload: dict[str, Any], metadata: dict[str, Any]) -> None:
        pass


def _postgres_env(url: str) -> dict[str, str]:
    u = make_url(url)
    return {"PERSISTENCE_MODULE": "eventsourcing.postgres", "POSTGRES_DBNAME": str(u.database),
            "POSTGRES_HOST": str(u.host or "127.0.0.1"), "POSTGRES_PORT": str(u.port or 5432),
            "POSTGRES_USER": str(u.username), "POSTGRES_PASSWORD": str(u.password or "")}


def eventsourcing_application(url: str, items: Sequence[EventDict], batch: int) -> float:
    """Events/s of an ``Application`` that records each batch with one ``save`` call.

    Aggregates stay in memory (no repository reads), and each stream's creation event is
    saved before the clock starts, so the timed part stores exactly ``items``.
    """
    app = Application(env=_postgres_env(url))
    sessions: dict[str, Session] = {}
    for item in items:
        if item["stream_id"] not in sessions:
            sessions[item["stream_id"]] = Session()
    app.save(*sessions.values())
    started = time.perf_counter()
    for start in range(0, len(items), batch):
        touched: dict[str, Session] = {}
        for item in items[start:start + batch]:
            session = touched[item["stream_id"]] = sessions[item["stream_id"]]
            session.record(item["type"], item["payload"], item.get("metadata", {}))
        app.save(*touched.values())
    seconds = time.perf_counter() - started
    app.close()
    return len(items) / seconds


def eventsourcing_recorder(url: str, items: Sequence[EventDict], batch: int) -> float:
    """Events/s of the PostgreSQL recorder alone: ``insert_events`` per batch, encoding the
    state (JSON, as our store does) inside the clock."""
    u = make_url(url)
    datastore = PostgresDatastore(str(u.database), str(u.host or "127.0.0.1"), u.port or 5432,
                                  str(u.username), str(u.password or ""), pool_size=1)
    recorder = PostgresApplicationRecorder(datastore)
    recorder.create_table()
    versions: dict[str, int] = {}
    ids = {name: uuid.uuid5(uuid.NAMESPACE_URL, name) for name in {i["stream_id"] for i in items}}
    started = time.perf_counter()
    for start in range(0, len(items), batch):
        rows = []
        for item in items[start:start + batch]:
            version = versions[item["stream_id"]] = versions.get(item["stream_id"], 0) + 1
            state = json.dumps({"payload": item["payload"], "metadata": item.get("metadata", {})},
                               separators=(",", ":")).encode()
            rows.append(StoredEvent(ids[item["stream_id"]], version, item["type"], state))
        recorder.insert_events(rows)
    seconds = time.perf_counter() - started
    datastore.close()
    return len(items) / seconds


# --- bare Kafka producers --------------------------------------------------------------


def bare_confluent(bootstrap: str, topic: str, messages: Sequence[tuple[bytes, bytes]],
                   page: int = 1000) -> float:
    """Messages/s of librdkafka with the relay's settings, flushing every ``page``."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "batch.size": 1024 * 1024})
    failed: list[Any] = []

    def report(err: Any, _msg: Any) -> None:
        if err is not None:
            failed.append(err)

    producer.produce(topic, value=b"warm-up", key=b"w")
    producer.flush(30)
    started = time.perf_counter()
    for start in range(0, len(messages), page):
        for key, value in messages[start:start + page]:
            producer.produce(topic, value=value, key=key, on_delivery=report)
        producer.flush(60)
    seconds = time.perf_counter() - started
    assert not failed, failed[:3]
    return len(messages) / seconds


def bare_kafka_python(bootstrap: str, topic: str, messages: Sequence[tuple[bytes, bytes]],
                      page: int = 1000) -> float:
    """Messages/s of kafka-python with the relay's settings, flushing every ``page``."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True,
                             linger_ms=5, batch_size=256 * 1024)
    producer.send(topic, key=b"w", value=b"warm-up").get(30)
    started = time.perf_counter()
    for start in range(0, len(messages), page):
        futures = [producer.send(topic, key=k, value=v) for k, v in messages[start:start + page]]
        producer.flush(60)
        for f in futures:
            f.get(60)
    seconds = time.perf_counter() - started
    producer.close()
    return len(messages) / seconds


# --- the physical ceiling -----------------------------------------------------------------

COLUMNS = ("position, event_id, stream_id, stream_seq, type, schema_version, payload, occurred_at, "
           "recorded_at, actor, tenant, specialist, adapter_version, contract, causation_id, "
           "correlation_id, payload_digest, prev_hash, hash")


def copy_ceiling(url: str) -> float:
    """Rows/s of COPYing the log's own rows into a bare table (same columns, nothing else)."""
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn) as conn:
        select = COLUMNS.replace("payload,", "payload::text,")  # as JSON text, like a client sends
        rows = conn.execute(f"SELECT {select} FROM events ORDER BY position").fetchall()
        conn.execute("CREATE TABLE bench_bare (LIKE events)")
        conn.commit()
        started = time.perf_counter()
        with conn.cursor() as cur, cur.copy(f"COPY bench_bare ({COLUMNS}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        conn.commit()
        seconds = time.perf_counter() - started
    return len(rows) / seconds


def published_messages(url: str) -> list[tuple[bytes, bytes]]:
    """(key, value) of every stored event, the value as the relay publishes it (near enough:
    the stored row as JSON), for the bare producers."""
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT stream_id, row_to_json(e)::text FROM events e "
                            "ORDER BY position").fetchall()
    return [(k.encode(), v.encode()) for k, v in rows]
