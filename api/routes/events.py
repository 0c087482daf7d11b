"""Routes of the event log: append batches, read by id, by stream, and the global feed.

Reads answer with ``SafeJSONResponse``: the log keeps forever whatever it took, so a
payload stored before today's limits (nested hundreds deep, a NaN) must still encode.
"""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Body, HTTPException, Path, Query, Response
from fastapi.responses import JSONResponse

import console.convertors  # noqa: F401 (the {…:rest} in a path)
from api.append_route import AppendRoute
from api.deps import EventsRead, EventsWrite, EventWritingDep, SettingsDep, StoreDep
from api.errors import invalid_field
from api.event_pages import event_page
from api.jsonbody import StrictJsonRoute
from api.responses import BODY, SECURED, errors
from api.schemas.common import INT64_MAX
from api.schemas.event_batch import ClientBatch
from api.schemas.events import AppendedBatchOut, EventPage, RecordedEventOut
from events.ingest import IngestLimits, ingest
from events.model import parse_event_id
from kernel.errors import Invalid
from kernel.json_output import json_bytes

router = APIRouter(prefix="/v1", tags=["events"], route_class=StrictJsonRoute, responses=SECURED)


class SafeJSONResponse(JSONResponse):
    """JSON of any depth (``kernel.json_output``); FastAPI's encoder stops at ~250 levels.
    A JSONResponse, so that the OpenAPI documents the route's response_model as its body."""

    def render(self, content: Any) -> bytes:
        return json_bytes(content)


def append_events(
    batch: Annotated[ClientBatch, Body()], principal: EventsWrite, writing: EventWritingDep,
) -> Response:
    """Append a batch of events, all or nothing; 200 when every item was a duplicate.
    Registry names in core events are checked (422 naming the field; see docs/events.md)."""
    # The body is an EventBatchIn, validated straight into ClientEvents (ClientBatch).
    settings = writing.settings
    limits = IngestLimits(settings.max_batch_events, settings.max_payload_bytes, settings.json_limits)
    appended = ingest(writing.appender, batch, limits, principal.author, writing.references)
    created = sum(a.created for a in appended)
    writing.metrics.events_appended.inc(created)
    # The answer is AppendedBatchOut, encoded here in one call: building and then
    # serialising a model per event cost a tenth of a 200-event request. orjson writes
    # the bytes json.dumps(separators=(",", ":"), ensure_ascii=False) wrote, encoded, in a
    # tenth of its time (1.5 ms for 200 events); every value is text or a 64-bit int.
    body = orjson.dumps({"events": [
        {"event_id": str(e.event_id), "stream_id": e.stream_id, "stream_seq": e.stream_seq,
         "position": e.position, "hash": e.hash}
        for e in (a.event for a in appended)
    ]})
    return Response(body, status_code=201 if created else 200, media_type="application/json")


# Declared as @router.post would, with its own route class (api/append_route.py: the
# usual request takes a shorter way to this same function).
router.add_api_route("/events", append_events, methods=["POST"], status_code=201,
                     response_model=AppendedBatchOut, route_class_override=AppendRoute,
                     responses={200: {"model": AppendedBatchOut,
                                      "description": "Every event of the batch was already stored"},
                                **BODY, **errors(409, 413)})


@router.get("/events/{event_id}", response_model=RecordedEventOut, response_class=SafeJSONResponse,
            responses=errors(404, 422))
def get_event(event_id: Annotated[str, Path(description="A UUID, or a chat completion's id "
                                             "(chatcmpl-<hex>: its turn.assistant event)")],
              store: StoreDep, principal: EventsRead) -> Response:
    """One event by id, payload upcast to the type's current schema version."""
    try:
        wanted = parse_event_id(event_id)
    except Invalid as exc:
        raise invalid_field("event_id", str(exc)) from None
    event = store.get(wanted, principal.tenant)
    if event is None:
        raise HTTPException(404, f"no event {event_id}")
    return SafeJSONResponse(event.to_json())


@router.get("/streams/{stream_id:rest}", response_model=EventPage, response_class=SafeJSONResponse)
def read_stream(
    stream_id: str, store: StoreDep, settings: SettingsDep, principal: EventsRead,
    after_seq: Annotated[int, Query(ge=0, le=INT64_MAX)] = 0,
    limit: Annotated[int, Query(ge=1, le=5000)] = 1000,
) -> Response:
    """A stream's events in stream_seq order (``next_after`` is a stream_seq here); a page
    stops early at HCP_MAX_PAGE_BYTES (never before its first event)."""
    events = store.scan_stream(stream_id, after_seq, limit, principal.tenant)
    return event_page(events, settings.max_page_bytes, after_seq, lambda e: e.stream_seq,
                      lambda: store.head(principal.tenant))


@router.get("/events", response_model=EventPage, response_class=SafeJSONResponse)
def read_feed(
    store: StoreDep, settings: SettingsDep, principal: EventsRead,
    after: Annotated[int, Query(ge=0, le=INT64_MAX, description="Last position already seen")] = 0,
    limit: Annotated[int, Query(ge=1, le=5000)] = 500,
) -> Response:
    """The global feed in position order, one page at a time; a page stops early at
    HCP_MAX_PAGE_BYTES (never before its first event): go on from ``next_after``."""
    events = store.scan_all(after, limit, principal.tenant)
    return event_page(events, settings.max_page_bytes, after, lambda e: e.position,
                      lambda: store.head(principal.tenant))
