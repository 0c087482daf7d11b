"""Request and response bodies of the event routes (the OpenAPI text comes from here)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class MetadataIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    occurred_at: datetime | None = None
    actor: str | None = Field(None, max_length=200)
    tenant: str | None = Field(None, max_length=200)
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
        None, ge=1, description="Payload schema version; default: the type's current one")
    event_id: uuid.UUID | None = Field(None, description="Client id; makes retries idempotent")
    expected_seq: int | None = Field(
        None, ge=0, description="Last stream_seq the writer saw; 0 = the stream must be new"
    )
    metadata: MetadataIn = Field(default_factory=MetadataIn)


class EventBatchIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    events: list[EventIn]


class AppendedOut(BaseModel):
    event_id: uuid.UUID
    stream_id: str
    stream_seq: int
    position: int
    hash: str


class AppendedBatchOut(BaseModel):
    events: list[AppendedOut]


class EventPage(BaseModel):
    events: list[dict[str, Any]]
    next_after: int = Field(description="Pass as ?after= to read the next page")
    head: int = Field(description="The last committed position")


class VerifyOut(BaseModel):
    intact: bool
    checked: int
    last_position: int
    first_break_position: int | None
    reason: str | None
