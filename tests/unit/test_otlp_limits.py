"""The OTLP bounds are measured on the wire, before decoding: exactly what protobuf would
build (every message counted, spans apart), nothing refused that is within the bounds, and
a body that is not OTLP refused as malformed."""

from __future__ import annotations

import gzip
from typing import Any

import pytest
from google.protobuf.message import Message
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from integrations.otlp.decode import decode
from integrations.otlp.limits import (
    OtlpLimits,
    OtlpMalformed,
    OtlpTooLarge,
    check_json_text,
    check_protobuf,
    inflate,
)


def _nested(depth: int) -> AnyValue:
    value = AnyValue(string_value="leaf")
    for _ in range(depth):
        value = AnyValue(kvlist_value={"values": [KeyValue(key="k", value=value)]})
    return value


def _request(spans: int) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    for r in range(2):
        resource = request.resource_spans.add()
        resource.resource.attributes.add(key="service.name", value=AnyValue(string_value=f"s{r}"))
        scope = resource.scope_spans.add()
        for i in range(spans):
            span = scope.spans.add(name=f"chat {i}", trace_id=bytes(16), span_id=bytes(8),
                                   start_time_unix_nano=2**63 - 1, kind=3)
            span.attributes.add(key="gen_ai.operation.name", value=AnyValue(string_value="chat"))
            span.attributes.add(key="n", value=AnyValue(int_value=-1))
            span.attributes.add(key="deep", value=_nested(3))
            span.attributes.add(key="list", value=AnyValue(array_value={"values": [
                AnyValue(double_value=0.5), AnyValue(bool_value=True)]}))
            span.events.add(name="gen_ai.choice", time_unix_nano=5)
            span.links.add(trace_id=bytes(16), span_id=bytes(8))
            span.status.code = 2
    return request


def _messages(message: Message) -> int:
    """Protobuf's own count of the messages below ``message``."""
    total = 0
    for field, value in message.ListFields():
        if field.type != field.TYPE_MESSAGE:
            continue
        children: list[Any] = list(value) if field.is_repeated else [value]
        total += len(children) + sum(_messages(c) for c in children)
    return total


def test_the_wire_count_is_protobufs_own_and_the_bounds_are_inclusive() -> None:
    request = _request(spans=5)
    raw, items = request.SerializeToString(), _messages(request)
    check_protobuf(raw, OtlpLimits(max_spans=10, max_items=items))
    with pytest.raises(OtlpTooLarge, match="more than 9 spans"):
        check_protobuf(raw, OtlpLimits(max_spans=9))
    with pytest.raises(OtlpTooLarge, match="messages"):
        check_protobuf(raw, OtlpLimits(max_items=items - 1))


def test_nesting_is_bounded_on_the_wire() -> None:
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add(name="x")
    span.attributes.add(key="deep", value=_nested(20))  # 3 messages a level, 5 above them
    raw = request.SerializeToString()
    check_protobuf(raw, OtlpLimits(max_depth=5 + 3 * 20))
    with pytest.raises(OtlpMalformed, match="nests deeper"):
        check_protobuf(raw, OtlpLimits(max_depth=5 + 3 * 20 - 1))


@pytest.mark.parametrize("raw", [b"\x0a\x05\x12", b"\x0a", b"\x0b\x00", b"\x08" + b"\xff" * 11])
def test_bytes_that_cannot_be_an_export_are_malformed(raw: bytes) -> None:
    with pytest.raises(OtlpMalformed):
        check_protobuf(raw, OtlpLimits())


def test_a_decoded_export_within_the_bounds_keeps_every_span() -> None:
    request = _request(spans=3)
    body = gzip.compress(request.SerializeToString())
    spans = decode(body, "application/x-protobuf", "gzip", OtlpLimits(max_spans=6))
    assert [s.name for s in spans] == [f"chat {i}" for i in range(3)] * 2


def test_inflating_stops_at_the_bound() -> None:
    body = gzip.compress(b"\0" * 1000)
    assert inflate(body, "gzip", OtlpLimits(max_inflated=1000)) == b"\0" * 1000
    with pytest.raises(OtlpTooLarge, match="inflates past 999 bytes"):
        inflate(body, "gzip", OtlpLimits(max_inflated=999))


def test_json_brackets_inside_strings_are_not_counted() -> None:
    text = b'{"a": ["{[{[", "\\"{{{{"], "b": {}}'  # 3 containers, 10 brackets in strings
    check_json_text(text, OtlpLimits(max_items=3))
    with pytest.raises(OtlpTooLarge):
        check_json_text(text, OtlpLimits(max_items=2))
