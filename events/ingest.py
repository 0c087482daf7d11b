"""Turning client input into events: the checks a batch must pass before it is stored."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from events.catalogue import PayloadInvalid, validate_client_event
from events.model import EventMetadata, NewEvent
from events.store import Appended, EventStore
from kernel.canonical import canonical_json
from kernel.json_input import JsonLimits, JsonRejected, check_json_value


@dataclass(frozen=True)
class ClientEvent:
    stream_id: str
    type: str
    payload: Any
    event_id: uuid.UUID | None = None
    schema_version: int | None = None  # None: the type's current version
    expected_seq: int | None = None
    occurred_at: datetime | None = None
    actor: str | None = None
    tenant: str | None = None
    specialist: str | None = None
    adapter_version: str | None = None
    contract: str | None = None
    causation_id: uuid.UUID | None = None
    correlation_id: uuid.UUID | None = None


class BatchRejected(ValueError):
    """The whole batch is refused; ``field`` points at the offending item and key."""

    def __init__(self, field: str, message: str, status: int = 422) -> None:
        super().__init__(f"{field}: {message}")
        self.field, self.message, self.status = field, message, status


@dataclass(frozen=True)
class IngestLimits:
    max_batch_events: int
    max_payload_bytes: int
    payload: JsonLimits = field(default_factory=JsonLimits)  # depth, keys, string length


def ingest(store: EventStore, items: Sequence[ClientEvent], limits: IngestLimits) -> list[Appended]:
    """Validate every item, then append the batch all-or-nothing."""
    if not items:
        raise BatchRejected("events", "the batch is empty")
    if len(items) > limits.max_batch_events:
        raise BatchRejected(
            "events", f"{len(items)} events exceed the batch limit of {limits.max_batch_events}", 413
        )
    return store.append([_to_new_event(i, item, limits) for i, item in enumerate(items)])


def _to_new_event(index: int, item: ClientEvent, limits: IngestLimits) -> NewEvent:
    # First, before anything walks the payload recursively: it must be storable as sent
    # (finite numbers, no lone surrogates or NUL, no duplicate keys) and within limits.
    try:
        check_json_value(item.payload, limits.payload, f"events[{index}].payload")
    except JsonRejected as exc:
        raise BatchRejected(exc.field, exc.message) from None
    try:
        version = validate_client_event(item.type, item.schema_version, item.payload)
    except PayloadInvalid as exc:
        raise BatchRejected(f"events[{index}].{exc.field}", exc.message) from None
    size = len(canonical_json(item.payload).encode())
    if size > limits.max_payload_bytes:
        raise BatchRejected(
            f"events[{index}].payload",
            f"{size} bytes exceed the payload limit of {limits.max_payload_bytes}", 413,
        )
    meta = EventMetadata(
        occurred_at=item.occurred_at, actor=item.actor, tenant=item.tenant,
        specialist=item.specialist, adapter_version=item.adapter_version,
        contract=item.contract, causation_id=item.causation_id,
        correlation_id=item.correlation_id,
    )
    return NewEvent(
        stream_id=item.stream_id, type=item.type, payload=item.payload,
        event_id=item.event_id or uuid.uuid4(), schema_version=version, metadata=meta,
        expected_seq=item.expected_seq,
    )
