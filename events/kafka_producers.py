"""The relay's Kafka producers: librdkafka (confluent-kafka, the default) or kafka-python.

Both publish a page and return only once the broker has acknowledged every message of it
(acks=all, idempotent producer, so a retried batch is de-duplicated and never overtakes a
later one); anything else raises ``PublishFailed`` and the relay does not move its
checkpoint. Why two: kafka-python's record accumulator is pure Python and costs 120-145 µs
of CPU per message, which bounded the whole ingest path at ~7k messages/s per relay;
librdkafka does the same work in C (docs/scaling.md, "Kafka, the relay and the consumers").
kafka-python stays selectable (``HCP_KAFKA_PRODUCER=kafka-python``) and stays the
evaluators' consumer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from events.kafka_io import KafkaPublisher, PublishFailed, make_producer
from events.relay import OutboxMessage

log = logging.getLogger(__name__)

ProducerKind = Literal["confluent-kafka", "kafka-python"]
PRODUCER_KINDS: tuple[ProducerKind, ...] = ("confluent-kafka", "kafka-python")


class ClosablePublisher(Protocol):
    def publish(self, topic: str, messages: Sequence[Any]) -> None: ...

    def close(self) -> None: ...


def make_publisher(kind: str, bootstrap: str, **overrides: Any) -> ClosablePublisher:
    """The relay's publisher for ``HCP_KAFKA_PRODUCER``; ``overrides`` go to the client's
    own configuration (librdkafka property names for confluent-kafka)."""
    if kind == "confluent-kafka":
        return ConfluentPublisher(lambda: make_confluent_producer(bootstrap, **overrides))
    if kind == "kafka-python":
        return KafkaPublisher(make_producer(bootstrap, **overrides),
                              factory=lambda: make_producer(bootstrap, **overrides))
    raise ValueError(f"unknown Kafka producer {kind!r} (choose one of {', '.join(PRODUCER_KINDS)})")


def make_confluent_producer(bootstrap: str, **overrides: Any) -> Producer:
    """The librdkafka twin of ``kafka_io.make_producer``.

    enable.idempotence implies acks=all and at most 5 requests in flight per partition,
    with sequence numbers, so per-stream order survives retries. message.timeout.ms bounds
    how long librdkafka keeps retrying one message before it reports it failed; the relay
    then retries the whole page from its checkpoint.

    delivery.report.only.error: librdkafka reports only the messages that failed, instead
    of calling back into Python for every message (a tenth of the relay's CPU per
    message). A page is acknowledged in full exactly as before: ``flush`` returns 0 only
    once no message is waiting, in flight or unreported (librdkafka's queue length counts
    all three), so every message has then either been acknowledged or reported failed.
    """
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
        "linger.ms": 5, "batch.size": 1024 * 1024, "message.timeout.ms": 60_000,
        "client.id": "hcp-relay", "delivery.report.only.error": True,
    }
    config.update(overrides)
    return Producer(config)


class ConfluentPublisher:
    """Publishes a page with librdkafka and checks every delivery report before returning."""

    def __init__(self, factory: Callable[[], Producer], timeout_s: float = 90.0) -> None:
        self.factory, self.timeout_s = factory, timeout_s
        self.producer = factory()

    def publish(self, topic: str, messages: Sequence[OutboxMessage]) -> None:
        failures: list[KafkaError] = []

        def delivered(err: KafkaError | None, _msg: Message) -> None:
            if err is not None:
                failures.append(err)

        produce = self.producer.produce
        try:
            for m in messages:
                try:
                    produce(topic, value=m.value, key=m.key, headers=list(m.headers),
                            on_delivery=delivered)
                except BufferError:  # the local queue is full
                    self._produce(topic, m, delivered)
            # flush() sends at once (no linger) and serves every delivery report.
            unacknowledged = self.producer.flush(self.timeout_s)
        except KafkaException as exc:
            self._renew_if_fatal(exc.args[0] if exc.args else None)
            raise PublishFailed(f"publishing to {topic} failed: {exc!r}") from exc
        if failures:
            self._renew_if_fatal(failures[0])
            raise PublishFailed(f"publishing to {topic} failed: {len(failures)} of {len(messages)} "
                                f"messages not acknowledged, first: {failures[0]}")
        if unacknowledged:
            raise PublishFailed(f"publishing to {topic} failed: {unacknowledged} messages still "
                                f"unacknowledged after {self.timeout_s:.0f} s")

    def _produce(self, topic: str, m: OutboxMessage, on_delivery: Callable[..., None]) -> None:
        while True:
            try:
                self.producer.produce(topic, value=m.value, key=m.key, headers=list(m.headers),
                                      on_delivery=on_delivery)
                return
            except BufferError:  # the local queue is full: wait for some deliveries, then retry
                self.producer.poll(0.1)

    def _renew_if_fatal(self, err: Any) -> None:
        # A fatal error (e.g. the idempotent producer lost its sequence state) leaves the
        # producer unusable; the relay's retry needs a new one, or it would fail forever.
        if isinstance(err, KafkaError) and err.fatal():
            log.warning("the Kafka producer hit a fatal error (%s); creating a new one", err)
            self.producer.purge()
            self.producer.close()
            self.producer = self.factory()

    def close(self) -> None:
        self.producer.flush(self.timeout_s)
        self.producer.close()
