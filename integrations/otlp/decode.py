"""OTLP/HTTP trace requests (protobuf or JSON, gzip or not) to plain spans.

The messages are the ``opentelemetry-proto`` package's. OTLP/JSON differs from protobuf's
canonical JSON in one way that matters: trace and span ids are hex, not base64
(opentelemetry-proto's JSON encoding spec), so they are turned into base64 before parsing.
"""

from __future__ import annotations

import base64
import json
import zlib
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

MAX_INFLATED = 64 * 1024 * 1024  # a gzip bomb stops here


class OtlpMalformed(ValueError):
    """The body is not an OTLP trace request (HTTP 400)."""


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
    error: bool  # status ERROR
    attributes: dict[str, Any]
    resource: dict[str, Any]
    events: tuple[SpanEvent, ...] = field(default=())


def decode(body: bytes, content_type: str, content_encoding: str) -> list[Span]:
    """Every span of the request, in the order sent."""
    raw = _inflate(body, content_encoding.strip().lower())
    request = ExportTraceServiceRequest()
    kind = content_type.split(";")[0].strip().lower()
    try:
        if kind == "application/json":
            json_format.ParseDict(_hex_ids_to_base64(json.loads(raw)), request, ignore_unknown_fields=True)
        elif kind in ("application/x-protobuf", "application/protobuf"):
            request.ParseFromString(raw)
        else:
            raise OtlpMalformed(f"content-type {kind or '(none)'}: send application/x-protobuf or "
                                "application/json")
    except (DecodeError, json_format.ParseError, ValueError, TypeError) as exc:
        if isinstance(exc, OtlpMalformed):
            raise
        raise OtlpMalformed(f"not an OTLP ExportTraceServiceRequest: {exc}") from None
    return [_span(span, resource) for rs in request.resource_spans
            for resource in [_attributes(rs.resource.attributes)]
            for ss in rs.scope_spans for span in ss.spans]


def _inflate(body: bytes, encoding: str) -> bytes:
    if encoding in ("", "identity"):
        return body
    if encoding != "gzip":
        raise OtlpMalformed(f"content-encoding {encoding}: only gzip is accepted")
    try:
        inflater = zlib.decompressobj(wbits=31)
        raw = inflater.decompress(body, MAX_INFLATED)
    except zlib.error:
        raise OtlpMalformed("the body is not gzip") from None
    if inflater.unconsumed_tail:
        raise OtlpMalformed(f"the body inflates past {MAX_INFLATED} bytes")
    return raw


def _span(span: Any, resource: dict[str, Any]) -> Span:
    return Span(span.trace_id.hex(), span.span_id.hex(), span.parent_span_id.hex(), span.name,
                span.start_time_unix_nano, span.end_time_unix_nano, span.status.code == 2,
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



