"""What an OTLP export may hold, checked before any object is built from it. Pure.

A gzip body of 2 KB can inflate to megabytes of empty spans (or empty attributes, events,
array values: any repeated message), and each becomes a protobuf object, then a Python
one. As the OpenTelemetry Collector's receivers bound a request before decoding it, the
export is measured first, on its bytes: inflated at most ``max_inflated`` bytes; then a
protobuf body is walked on the wire format (guided by the message descriptors, skipping
every string and number) counting its messages, its spans and its nesting, and a JSON
body's objects and arrays are counted on the text. Only a body within every bound is
parsed. Each walk stops at the first bound crossed, so refusing costs at most what the
bound allows.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


class OtlpMalformed(ValueError):
    """The body is not an OTLP trace request (HTTP 400)."""


class OtlpTooLarge(OtlpMalformed):
    """The export holds more than this server takes in one request (HTTP 413)."""


@dataclass(frozen=True)
class OtlpLimits:
    max_inflated: int = 16 * 1024 * 1024  # bytes of the body after gzip
    max_spans: int = 8192
    max_items: int = 262_144  # protobuf messages, or JSON objects and arrays
    max_depth: int = 64  # nesting of messages (protobuf) or of objects and arrays (JSON)


def inflate(body: bytes, encoding: str, limits: OtlpLimits) -> bytes:
    if encoding in ("", "identity"):
        raw = body
    elif encoding == "gzip":
        try:
            inflater = zlib.decompressobj(wbits=31)
            raw = inflater.decompress(body, limits.max_inflated + 1)
        except zlib.error:
            raise OtlpMalformed("the body is not gzip") from None
    else:
        raise OtlpMalformed(f"content-encoding {encoding}: only gzip is accepted")
    if len(raw) > limits.max_inflated:
        raise OtlpTooLarge(f"the body inflates past {limits.max_inflated} bytes")
    return raw


SCOPE_SPANS = ExportTraceServiceRequest.DESCRIPTOR.fields_by_name["resource_spans"].message_type \
    .fields_by_name["scope_spans"].message_type
SPANS = SCOPE_SPANS.fields_by_name["spans"]


def check_protobuf(raw: bytes, limits: OtlpLimits) -> None:
    """Walk the wire format of an ExportTraceServiceRequest without building it: raise
    OtlpTooLarge past a bound, OtlpMalformed where the bytes cannot be one."""
    pending: list[tuple[int, int, Descriptor, int]] = [(0, len(raw), ExportTraceServiceRequest.DESCRIPTOR, 0)]
    items = spans = 0
    while pending:
        at, end, message, depth = pending.pop()
        while at < end:
            tag = raw[at]  # one byte for every field number OTLP has: the common case inline
            tag, at = (tag, at + 1) if tag < 0x80 else _varint(raw, at, end)
            number, wire = tag >> 3, tag & 7
            if wire != 2:
                at = _skip(raw, at, end, wire)
                continue
            size = raw[at] if at < end else 0x80
            size, at = (size, at + 1) if size < 0x80 else _varint(raw, at, end)
            if at + size > end:
                raise OtlpMalformed("a length runs past the end of its message")
            child = _children(message).get(number)
            if child is not None:
                items, spans = items + 1, spans + (message is SCOPE_SPANS and number == SPANS.number)
                _bound(items, spans, depth + 1, limits)
                pending.append((at, at + size, child, depth + 1))
            at += size


_MESSAGE_FIELDS: dict[str, dict[int, Descriptor]] = {}


def _children(message: Descriptor) -> dict[int, Descriptor]:
    """The message-typed fields of ``message`` by number (descriptors answer slowly)."""
    found = _MESSAGE_FIELDS.get(message.full_name)
    if found is None:
        found = _MESSAGE_FIELDS[message.full_name] = {
            f.number: f.message_type for f in message.fields
            if f.type == FieldDescriptor.TYPE_MESSAGE}
    return found


def _bound(items: int, spans: int, depth: int, limits: OtlpLimits) -> None:
    if spans > limits.max_spans:
        raise OtlpTooLarge(f"the export holds more than {limits.max_spans} spans; "
                           "send them in several requests")
    if items > limits.max_items:
        raise OtlpTooLarge(f"the export holds more than {limits.max_items} messages (spans, "
                           "attributes, events, values); send them in several requests")
    if depth > limits.max_depth:
        raise OtlpMalformed(f"the export nests deeper than {limits.max_depth} levels")


def _varint(raw: bytes, at: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while at < end and shift < 64:
        byte = raw[at]
        value |= (byte & 0x7F) << shift
        at += 1
        if byte < 0x80:
            return value, at
        shift += 7
    raise OtlpMalformed("a truncated or overlong varint")


def _skip(raw: bytes, at: int, end: int, wire: int) -> int:
    if wire == 0:
        return _varint(raw, at, end)[1]
    width = {1: 8, 5: 4}.get(wire)
    if width is None or at + width > end:
        raise OtlpMalformed(f"wire type {wire} where OTLP has none")
    return at + width


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)


def check_json_text(raw: bytes, limits: OtlpLimits) -> None:
    """Count the objects and arrays of a JSON body before parsing it. Brackets inside
    strings are left out of the count, but only read again when the quick count is over."""
    quick = raw.count(b"{") + raw.count(b"[")
    if quick <= limits.max_items:
        return
    bare = _STRING.sub(b"", raw)
    if bare.count(b"{") + bare.count(b"[") > limits.max_items:
        raise OtlpTooLarge(f"the export holds more than {limits.max_items} JSON objects and "
                           "arrays; send it in several requests")


def deeper_than(document: Any, max_depth: int) -> bool:
    """Whether objects and arrays nest past ``max_depth``, found iteratively (the walks that
    come after it recurse)."""
    stack: list[tuple[Any, int]] = [(document, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            return True
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def check_json_value(document: Any, limits: OtlpLimits) -> None:
    """The parsed document's nesting and span count."""
    if deeper_than(document, limits.max_depth):
        raise OtlpMalformed(f"the export nests deeper than {limits.max_depth} levels")
    spans = sum(len(_list(ss, "spans")) for rs in _list(document, "resourceSpans", "resource_spans")
                for ss in _list(rs, "scopeSpans", "scope_spans"))
    if spans > limits.max_spans:
        raise OtlpTooLarge(f"the export holds more than {limits.max_spans} spans; "
                           "send them in several requests")


def _list(node: Any, *keys: str) -> list[Any]:
    if not isinstance(node, dict):
        return []
    for key in keys:
        found = node.get(key)
        if isinstance(found, list):
            return [item for item in found if isinstance(item, dict)]
    return []
