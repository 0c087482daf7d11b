"""OTLP/HTTP trace requests (protobuf or JSON, gzip or not) to plain spans.

The messages are the ``opentelemetry-proto`` package's. OTLP/JSON differs from protobuf's
canonical JSON in one way that matters: trace and span ids are hex, not base64
(opentelemetry-proto's JSON encoding spec), so they are turned into base64 before parsing.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from integrations.otlp.limits import (
    OtlpLimits,
    OtlpMalformed,
    check_json_text,
    check_json_value,
    check_protobuf,
    inflate,
)
from kernel.errors import Invalid
from kernel.json_input import JsonRejected, parse_strict

__all__ = ["OtlpLimits", "OtlpMalformed", "Span", "SpanEvent", "decode"]

STATUSES = {0: "unset", 1: "ok", 2: "error"}  # Status.StatusCode


class OtlpJsonInvalid(Invalid):
    """OTLP/JSON that parses but that no route takes (a repeated key): HTTP 422."""

    code = "invalid_json_value"

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True)
class SpanEvent:
    name: str
    attributes: dict[str, Any]


@dataclass(frozen=True)
class Span:
    trace_id: str  # hex
    span_id: str  # hex
    parent_span_id: str  # hex; "" for a root span
    name: str
    start_ns: int
    end_ns: int
    status: str  # the span's status code: unset | ok | error
    attributes: dict[str, Any]
    resource: dict[str, Any]
    events: tuple[SpanEvent, ...] = field(default=())

    @property
    def error(self) -> bool:
        return self.status == "error"


def decode(body: bytes, content_type: str, content_encoding: str,
           limits: OtlpLimits | None = None) -> list[Span]:
    """Every span of the request, in the order sent; nothing is built from a body past
    ``limits`` (``integrations.otlp.limits``)."""
    limits = limits or OtlpLimits()
    raw = inflate(body, content_encoding.strip().lower(), limits)
    request = ExportTraceServiceRequest()
    kind = content_type.split(";")[0].strip().lower()
    try:
        if kind == "application/json":
            json_format.ParseDict(_hex_ids_to_base64(_request_object(_json(raw, limits))), request,
                                  ignore_unknown_fields=True)
        elif kind in ("application/x-protobuf", "application/protobuf"):
            check_protobuf(raw, limits)
            request.ParseFromString(raw)
        else:
            raise OtlpMalformed(f"content-type {kind or '(none)'}: send application/x-protobuf or "
                                "application/json")
    except (DecodeError, json_format.ParseError, ValueError, TypeError) as exc:
        if isinstance(exc, OtlpMalformed | OtlpJsonInvalid):
            raise
        raise OtlpMalformed(f"not an OTLP ExportTraceServiceRequest: {exc}") from None
    return [_span(span, resource) for rs in request.resource_spans
            for resource in [_attributes(rs.resource.attributes)]
            for ss in rs.scope_spans for span in ss.spans]


def _request_object(parsed: Any) -> Any:
    """Unknown fields are ignored inside a request (OTLP's rule, for newer senders), but a
    body without the request's one field (``{"hello": 1}``) is no OTLP request at all."""
    if not isinstance(parsed, dict) or not ({"resourceSpans", "resource_spans"} & parsed.keys()):
        raise OtlpMalformed("not an OTLP ExportTraceServiceRequest: a JSON object with "
                            "resourceSpans expected")
    return parsed


def _json(raw: bytes, limits: OtlpLimits) -> Any:
    """The strict parse every JSON route uses (a repeated key is a 422 naming it), after
    the body's objects and arrays are counted, and before anything walks it."""
    check_json_text(raw, limits)
    try:
        document = parse_strict(raw)
    except JsonRejected as exc:
        if exc.whole_body:
            raise OtlpMalformed(exc.message) from None
        raise OtlpJsonInvalid(exc.field, exc.message) from None
    check_json_value(document, limits)
    return document


def _span(span: Any, resource: dict[str, Any]) -> Span:
    return Span(span.trace_id.hex(), span.span_id.hex(), span.parent_span_id.hex(), span.name,
                span.start_time_unix_nano, span.end_time_unix_nano,
                STATUSES.get(span.status.code, "unset"),
                _attributes(span.attributes), resource,
                tuple(SpanEvent(e.name, _attributes(e.attributes)) for e in span.events))


def _attributes(pairs: Any) -> dict[str, Any]:
    return {kv.key: value_of(kv.value) for kv in pairs}


def value_of(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [value_of(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value_of(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return getattr(value, kind)


_ID_KEYS = {"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"}


def _hex_ids_to_base64(node: Any) -> Any:
    if isinstance(node, list):
        return [_hex_ids_to_base64(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for k, v in node.items():
        if k in _ID_KEYS and isinstance(v, str):
            try:
                v = base64.b64encode(bytes.fromhex(v)).decode()
            except ValueError:
                raise OtlpMalformed(f"{k} must be hex (OTLP/JSON), got {v[:40]!r}") from None
        out[k] = _hex_ids_to_base64(v)
    return out



