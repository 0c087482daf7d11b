"""Bodies of the event routes and the audit routes over the log."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from api.schemas.common import INT32_MAX, INT64_MAX, JsonObject, Out, Timestamp, UtcDatetime, UuidText


class MetadataIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    occurred_at: UtcDatetime | None = None
    actor: str | None = Field(None, max_length=200, description="Kept as claimed_actor: the "
                              "stored actor is the API key that writes the event")
    tenant: str | None = Field(None, max_length=200, description="A tenant key's own tenant "
                               "(or omitted); an operator key may name any")
    specialist: str | None = Field(None, max_length=100)
    adapter_version: str | None = Field(None, max_length=200)
    contract: str | None = Field(None, max_length=200)
    causation_id: uuid.UUID | None = None
    correlation_id: uuid.UUID | None = None


class EventIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    stream_id: str = Field(min_length=1, max_length=200, description="Session or conversation id")
    type: str = Field(min_length=1, max_length=200, description="A catalogue type or x.<name>")
    payload: dict[str, Any]
    schema_version: int | None = Field(
        None, ge=1, le=INT32_MAX, description="Payload schema version; default: the type's current one")
    event_id: uuid.UUID | None = Field(None, description="Client id; makes retries idempotent")
    expected_seq: int | None = Field(
        None, ge=0, le=INT64_MAX,
        description="Last stream_seq the writer saw; 0 = the stream must be new")
    metadata: MetadataIn = Field(default_factory=MetadataIn)


class EventBatchIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    events: list[EventIn]


class AppendedOut(Out):
    event_id: uuid.UUID
    stream_id: str
    stream_seq: int
    position: int
    hash: str


class AppendedBatchOut(Out):
    events: list[AppendedOut]


class EventMetadataOut(Out):
    """Also ``claimed_actor`` (what the client sent as actor, unchecked), only on events
    whose client sent one: like the hash chain, the wire form carries it only when set."""

    occurred_at: Timestamp | None
    recorded_at: Timestamp
    actor: str | None = Field(description="The API key that wrote it (key:<label>), or the server")
    tenant: str | None
    specialist: str | None
    adapter_version: str | None
    contract: str | None
    causation_id: UuidText | None
    correlation_id: UuidText | None


class RecordedEventOut(Out):
    """``RecordedEvent.to_json()``: the payload upcast to the type's current version."""

    event_id: UuidText
    stream_id: str
    stream_seq: int
    position: int
    type: str
    schema_version: int
    payload: JsonObject
    metadata: EventMetadataOut
    payload_digest: str = Field(description="sha256 of the payload's canonical JSON, as stored")
    prev_hash: str
    hash: str


class EventPage(Out):
    events: list[RecordedEventOut]
    next_after: int = Field(description="Pass as ?after= to read the next page")
    head: int = Field(description="The last committed position")


class CatalogueEntryOut(Out):
    type: str
    summary: str
    current_version: int
    written_by: Literal["client", "server"] = Field(
        description="client: a type clients post; server: one only the server writes")
    schemas: dict[str, JsonObject] = Field(description="Schema version -> JSON Schema of the payload")


class VerifyOut(Out):
    intact: bool
    checked: int
    last_position: int
    first_break_position: int | None
    reason: str | None
