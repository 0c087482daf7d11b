"""Routes of the event log: append batches, read by id, by stream, and the global feed."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Response

from api.deps import EventsRead, EventsWrite, MetricsDep, SettingsDep, StoreDep
from api.schemas import AppendedBatchOut, AppendedOut, EventBatchIn, EventPage
from events.ingest import ClientEvent, IngestLimits, ingest

router = APIRouter(prefix="/v1", tags=["events"])


@router.post("/events", status_code=201, response_model=AppendedBatchOut)
def append_events(
    batch: EventBatchIn, store: StoreDep, settings: SettingsDep, metrics: MetricsDep,
    response: Response,
    principal: EventsWrite,
) -> AppendedBatchOut:
    """Append a batch of events, all or nothing; 200 when every item was a duplicate."""
    items = [
        ClientEvent(stream_id=e.stream_id, type=e.type, payload=e.payload, event_id=e.event_id,
                    schema_version=e.schema_version, expected_seq=e.expected_seq,
                    **e.metadata.model_dump())
        for e in batch.events
    ]
    appended = ingest(store, items,
                      IngestLimits(settings.max_batch_events, settings.max_payload_bytes),
                      principal.author)
    if not any(a.created for a in appended):
        response.status_code = 200
    metrics.events_appended.inc(sum(a.created for a in appended))
    return AppendedBatchOut(events=[
        AppendedOut(event_id=a.event.event_id, stream_id=a.event.stream_id,
                    stream_seq=a.event.stream_seq, position=a.event.position, hash=a.event.hash)
        for a in appended
    ])


@router.get("/events/{event_id}")
def get_event(event_id: uuid.UUID, store: StoreDep,
              principal: EventsRead) -> dict:
    """One event by id, payload upcast to the type's current schema version."""
    event = store.get(event_id, principal.tenant)
    if event is None:
        raise HTTPException(404, f"no event {event_id}")
    return event.to_json()


@router.get("/streams/{stream_id}", response_model=EventPage)
def read_stream(
    stream_id: str, store: StoreDep, principal: EventsRead,
    after_seq: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=5000)] = 1000,
) -> EventPage:
    """A stream's events in stream_seq order (``next_after`` is a stream_seq here)."""
    events = store.read_stream(stream_id, after_seq, limit, principal.tenant)
    return EventPage(events=[e.to_json() for e in events],
                     next_after=events[-1].stream_seq if events else after_seq,
                     head=store.head(principal.tenant))


@router.get("/events", response_model=EventPage)
def read_feed(
    store: StoreDep, principal: EventsRead,
    after: Annotated[int, Query(ge=0, description="Last position already seen")] = 0,
    limit: Annotated[int, Query(ge=1, le=5000)] = 500,
) -> EventPage:
    """The global feed in position order, one page at a time."""
    events = store.read_all(after, limit, tenant=principal.tenant)
    return EventPage(events=[e.to_json() for e in events],
                     next_after=events[-1].position if events else after,
                     head=store.head(principal.tenant))
