"""The event as a frozen value object. Pure: no database, no Kafka."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kernel.clock import utc

# Metadata fields a client may set on an event, besides stream, type and payload.
METADATA_FIELDS = (
    "occurred_at",
    "actor",
    "tenant",
    "specialist",
    "adapter_version",
    "contract",
    "causation_id",
    "correlation_id",
    "claimed_actor",
)

# Fields added after the log began: each is part of the wire form and of the chain hash
# only when set, so every event written before it existed keeps its hash.
OPTIONAL_METADATA = ("claimed_actor",)


@dataclass(frozen=True)
class EventMetadata:
    """Who and what an event is about; all of it is covered by the hash chain."""

    occurred_at: datetime | None = None
    actor: str | None = None
    tenant: str | None = None
    specialist: str | None = None  # which Mixture-of-LoRA slot served the turn
    adapter_version: str | None = None  # e.g. "coding@3"
    contract: str | None = None  # HCP contract version the harness ran under, e.g. "default@2"
    causation_id: uuid.UUID | None = None
    correlation_id: uuid.UUID | None = None
    # What the client said ``actor`` was; ``actor`` itself is stamped from its API key.
    claimed_actor: str | None = None


@dataclass(frozen=True)
class NewEvent:
    """An event a writer wants appended; the store assigns seq, position and hash."""

    stream_id: str
    type: str
    payload: dict[str, Any]
    event_id: uuid.UUID = field(default_factory=uuid.uuid4)
    schema_version: int = 1
    metadata: EventMetadata = field(default_factory=EventMetadata)
    # The stream's last stream_seq the writer has seen; 0 means "the stream must be new".
    expected_seq: int | None = None
    # ``canonical_json(payload)`` when the writer has it already (ingest measured the
    # payload with it): the store digests and writes it instead of encoding again. It
    # must be exactly that text; it is not part of the event's identity.
    payload_json: str | None = field(default=None, compare=False, repr=False)
    # False: the stream must exist already and be the writer's tenant's (a client writing
    # a stream the server derives, ``events.derived``); refused as not found otherwise.
    may_create: bool = field(default=True, compare=False, repr=False)


@dataclass(frozen=True)
class RecordedEvent:
    """An event as stored: immutable, positioned and chained."""

    event_id: uuid.UUID
    stream_id: str
    stream_seq: int
    position: int
    type: str
    schema_version: int
    payload: dict[str, Any]
    metadata: EventMetadata
    recorded_at: datetime
    payload_digest: str
    prev_hash: str
    hash: str

    def to_json(self) -> dict[str, Any]:
        """The documented wire form (API responses and Kafka values)."""
        return {
            "event_id": str(self.event_id),
            "stream_id": self.stream_id,
            "stream_seq": self.stream_seq,
            "position": self.position,
            "type": self.type,
            "schema_version": self.schema_version,
            "payload": self.payload,
            "metadata": metadata_json(self.metadata, self.recorded_at),
            "payload_digest": self.payload_digest,
            "prev_hash": self.prev_hash,
            "hash": self.hash,
        }


def metadata_json(meta: EventMetadata, recorded_at: datetime) -> dict[str, Any]:
    """Metadata in its wire form; the hash chain covers exactly these fields too
    (an ``OPTIONAL_METADATA`` field appears only when it is set)."""
    optional = {name: getattr(meta, name) for name in OPTIONAL_METADATA
                if getattr(meta, name) is not None}
    return {
        "occurred_at": _iso(meta.occurred_at),
        "recorded_at": _iso(recorded_at),
        "actor": meta.actor,
        "tenant": meta.tenant,
        "specialist": meta.specialist,
        "adapter_version": meta.adapter_version,
        "contract": meta.contract,
        "causation_id": _str(meta.causation_id),
        "correlation_id": _str(meta.correlation_id),
        **optional,
    }


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else iso_time(moment)


def iso_time(moment: datetime) -> str:
    """A time as the wire form and the hash chain write it: UTC, microseconds."""
    return utc(moment).isoformat(timespec="microseconds")


def _str(value: uuid.UUID | None) -> str | None:
    return None if value is None else str(value)


def parse_event_id(text: str) -> uuid.UUID:
    """An event id as the API and the CLI print it: a UUID, or a chat completion's id
    ``chatcmpl-<32 hex>`` (the id of that answer's ``turn.assistant`` event)."""
    from kernel.errors import Invalid

    try:
        return uuid.UUID(text.strip().removeprefix("chatcmpl-"))
    except ValueError:
        raise Invalid(f"'{text[:80]}' is not an event id (a UUID, or chatcmpl-<32 hex>)") from None
