"""OTLP/HTTP traces in: ``POST /v1/traces`` maps OpenTelemetry GenAI spans onto sessions,
turns, route decisions, tool calls and answers in the key's tenant (docs/integrations.md).

Answers as an OTLP collector does: an ``ExportTraceServiceResponse`` in the request's
encoding, whose ``partial_success`` counts the spans skipped and says why; 400 for a body
that is not an OTLP request (or nests too deep), 413 for one past the span, message or
inflated-size bounds (checked before it is decoded: ``integrations.otlp.limits``), 422 when
no span maps at all or OTLP/JSON repeats a key (exporters do not retry a 4xx).
"""

from __future__ import annotations

import json
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from starlette.concurrency import run_in_threadpool

from access.principal import Principal
from api.deps import ContainerDep, EventWritingDep, require
from api.errors import error_body
from api.responses import BODY, SECURED, errors
from events.ingest import IngestLimits
from integrations.otlp.decode import OtlpLimits, OtlpMalformed
from integrations.otlp.limits import OtlpTooLarge
from integrations.otlp.mapping import Conversations
from integrations.otlp.traces import TraceResult, ingest_traces


def _conversations(request: Request) -> Conversations:
    """The process's memory of which conversation recent traces belong to."""
    state = request.app.state
    if not hasattr(state, "otlp_conversations"):
        state.otlp_conversations = Conversations()
    found: Conversations = state.otlp_conversations
    return found


router = APIRouter(prefix="/v1", tags=["opentelemetry"], responses=SECURED)
EventsWrite = Annotated[Principal, Depends(require("events:write"))]
OTLP_BODY = {"content": {"application/x-protobuf": {"schema": {"type": "string", "format": "binary"}},
                         "application/json": {"schema": {"type": "object"}}},
             "description": "An OTLP ExportTraceServiceRequest (gzip allowed)"}


@router.post("/traces", responses={200: {"content": {"application/json": {"schema": {"type": "object"}},
                                                     "application/x-protobuf": {"schema": {
                                                         "type": "string", "format": "binary"}}},
                                         "description": "ExportTraceServiceResponse"},
                                   **BODY, **errors(409, 413)},
             openapi_extra={"requestBody": OTLP_BODY})
async def export_traces(request: Request, principal: EventsWrite, writing: EventWritingDep,
                        container: ContainerDep) -> Response:
    """OTLP/HTTP trace export: GenAI spans become sessions of the key's tenant."""
    body, headers = await request.body(), request.headers
    settings = writing.settings
    limits = IngestLimits(settings.max_batch_events, settings.max_payload_bytes, settings.json_limits)
    bounds = OtlpLimits(settings.max_body_bytes, settings.otlp_max_spans, settings.otlp_max_items,
                        settings.max_json_depth)
    try:
        result: TraceResult = await run_in_threadpool(
            ingest_traces, writing.appender, container.store, body, headers.get("content-type", ""),
            headers.get("content-encoding", ""), limits, principal.author, writing.references,
            _conversations(request), bounds)
    except OtlpTooLarge as exc:
        return Response(json.dumps(error_body("otlp_too_large", str(exc), "body")), 413,
                        media_type="application/json")
    except OtlpMalformed as exc:
        return Response(json.dumps(error_body("malformed_otlp", str(exc), "body")), 400,
                        media_type="application/json")
    writing.metrics.events_appended.inc(result.created)
    answer = ExportTraceServiceResponse()
    if result.mapped.skipped_spans or result.mapped.late_spans:
        answer.partial_success.rejected_spans = result.mapped.skipped_spans
        answer.partial_success.error_message = result.mapped.summary()
    if headers.get("content-type", "").startswith("application/json"):
        return Response(json_format.MessageToJson(answer), media_type="application/json",
                        headers={"X-HCP-Events-Created": str(result.created)})
    return Response(answer.SerializeToString(), media_type="application/x-protobuf",
                    headers={"X-HCP-Events-Created": str(result.created)})
