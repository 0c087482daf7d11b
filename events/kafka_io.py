"""Kafka adapters: the wire form of an event, producer/consumer construction, topics.

The value of every message on ``<prefix>.events`` is ``RecordedEvent.to_json()`` as
compact UTF-8 JSON, *as stored* (the schema version it was written with, not upcast),
so a consumer can re-check ``payload_digest`` and ``hash`` against what it received.
Readers upcast after decoding, exactly as the database log does.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.errors import KafkaError, TopicAlreadyExistsError

from events.model import EventMetadata, RecordedEvent

log = logging.getLogger(__name__)

HEADER_TYPE = "type"
HEADER_SCHEMA_VERSION = "schema_version"

# --- the wire form ---------------------------------------------------------------


def encode_json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def event_to_bytes(event: RecordedEvent) -> bytes:
    return encode_json(event.to_json())


def event_headers(event: RecordedEvent) -> list[tuple[str, bytes]]:
    """Type and schema version, so a consumer can route or skip without parsing JSON."""
    return list(event_headers_of(event.type, event.schema_version))


@lru_cache(maxsize=1024)
def event_headers_of(event_type: str, schema_version: int) -> tuple[tuple[str, bytes], ...]:
    """Immutable, so one tuple per (type, version) serves every message of that kind."""
    return ((HEADER_TYPE, event_type.encode()), (HEADER_SCHEMA_VERSION, str(schema_version).encode()))


def event_from_json(data: dict[str, Any]) -> RecordedEvent:
    """The inverse of ``RecordedEvent.to_json()`` (``prev_hash`` defaults to "" for
    messages published before the wire form carried it)."""
    meta = data["metadata"]
    return RecordedEvent(
        event_id=uuid.UUID(data["event_id"]), stream_id=data["stream_id"],
        stream_seq=int(data["stream_seq"]), position=int(data["position"]), type=data["type"],
        schema_version=int(data["schema_version"]), payload=data["payload"],
        metadata=EventMetadata(
            occurred_at=_datetime(meta.get("occurred_at")), actor=meta.get("actor"),
            tenant=meta.get("tenant"), specialist=meta.get("specialist"),
            adapter_version=meta.get("adapter_version"), contract=meta.get("contract"),
            causation_id=_uuid(meta.get("causation_id")),
            correlation_id=_uuid(meta.get("correlation_id")),
            claimed_actor=meta.get("claimed_actor"),
        ),
        recorded_at=datetime.fromisoformat(meta["recorded_at"]),
        payload_digest=data["payload_digest"], prev_hash=data.get("prev_hash", ""),
        hash=data["hash"],
    )


def event_from_bytes(value: bytes) -> RecordedEvent:
    return event_from_json(json.loads(value))


def _datetime(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def _uuid(value: str | None) -> uuid.UUID | None:
    return None if value is None else uuid.UUID(value)


# --- construction -----------------------------------------------------------------


def make_producer(bootstrap: str, **overrides: Any) -> KafkaProducer:
    """A producer that keeps per-partition order and never loses an acknowledged send.

    acks=all plus the idempotent producer: a retried batch is de-duplicated by the
    broker and cannot overtake a later one (kafka-python keeps order with idempotence
    on, up to 5 requests in flight), so per-stream order survives broker hiccups.
    """
    config: dict[str, Any] = {
        "bootstrap_servers": bootstrap, "acks": "all", "enable_idempotence": True,
        "linger_ms": 5, "batch_size": 256 * 1024, "client_id": "hcp-relay",
    }
    config.update(overrides)
    return KafkaProducer(**config)


def make_consumer(bootstrap: str, group_id: str, **overrides: Any) -> KafkaConsumer:
    """A group consumer (not yet subscribed) that commits only when told to, so offsets
    follow durable results rather than a timer."""
    config: dict[str, Any] = {
        "bootstrap_servers": bootstrap, "group_id": group_id, "enable_auto_commit": False,
        "auto_offset_reset": "earliest", "client_id": f"hcp-{group_id}",
    }
    config.update(overrides)
    return KafkaConsumer(**config)


def ensure_topics(bootstrap: str, topics: Sequence[str], partitions: int = 3,
                  replication_factor: int = 1) -> list[str]:
    """Create the topics that do not exist yet; return the names created.

    Brokers may auto-create topics, but with their own defaults; creating them here
    gives the partition count we expect (keys spread across partitions by stream).
    """
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="hcp-admin")
    try:
        missing = sorted(set(topics) - set(admin.list_topics()))
        if not missing:
            return []
        spec = {t: {"num_partitions": partitions, "replication_factor": replication_factor}
                for t in missing}
        try:
            admin.create_topics(spec, wait_for_metadata=True)
        except TopicAlreadyExistsError:
            log.info("topics %s were created concurrently", missing)
        return missing
    finally:
        admin.close()


class PublishFailed(RuntimeError):
    """Some message of a page was not acknowledged; the page must be published again."""


class KafkaPublisher:
    """Publishes a page of outbox messages and returns only once all are acknowledged.

    With ``factory``, a failed page also replaces the producer: kafka-python's idempotent
    producer treats some broker errors (e.g. a message too large) as fatal and refuses
    every later send, so retrying the page on the same producer would fail forever.
    """

    def __init__(self, producer: KafkaProducer, timeout_s: float = 60.0,
                 factory: Callable[[], KafkaProducer] | None = None) -> None:
        self.producer = producer
        self.timeout_s = timeout_s
        self.factory = factory

    def publish(self, topic: str, messages: Sequence[Any]) -> None:
        try:
            futures = [
                self.producer.send(topic, key=m.key, value=m.value, headers=list(m.headers))
                for m in messages
            ]
            self.producer.flush(timeout=self.timeout_s)
            for future in futures:
                future.get(timeout=self.timeout_s)  # raises the send's error, if any
        except KafkaError as exc:
            self._renew()
            raise PublishFailed(f"publishing to {topic} failed: {exc!r}") from exc

    def _renew(self) -> None:
        if self.factory is None:
            return
        try:
            fresh = self.factory()
        except KafkaError:  # e.g. no broker reachable now: the relay's next retry tries again
            log.warning("could not replace the failed Kafka producer", exc_info=True)
            return
        self.producer.close(timeout=0)
        self.producer = fresh

    def close(self) -> None:
        self.producer.close(timeout=self.timeout_s)
