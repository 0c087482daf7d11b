"""Stored rows straight to their Kafka value: the relay's read path.

``event_to_bytes(event_from_row(row))`` parses the payload's stored JSON into Python
objects, builds the event and its wire dict, and encodes everything again: about half of
the relay's CPU per message. The payload column already holds the event's payload as
JSON text (on PostgreSQL, the canonical JSON that was digested, kept verbatim by the
``json`` type), and every other field is a scalar, so the value can be assembled from
the row as text. The result is the same wire form, field for field and in the same key
order (``RecordedEvent.to_json``); where the payload was stored as canonical JSON it is
byte-for-byte ``event_to_bytes`` (tests/integration/test_wire_rows.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from json.encoder import encode_basestring
from typing import Any

from sqlalchemy import Select, Text, cast, select

from events.model import OPTIONAL_METADATA, iso_time
from events.tables import events as events_table


@dataclass(frozen=True, slots=True)
class WireEvent:
    """What the relay publishes of one stored event."""

    position: int
    stream_id: str
    type: str
    schema_version: int
    value: bytes  # the event's wire JSON, as ``event_to_bytes`` makes it


_c = events_table.c
_SCALARS = (_c.position, _c.event_id, _c.stream_id, _c.stream_seq, _c.type, _c.schema_version)
_METADATA = (_c.occurred_at, _c.recorded_at, _c.actor, _c.tenant, _c.specialist,
             _c.adapter_version, _c.contract, _c.causation_id, _c.correlation_id)
_OPTIONAL = tuple(_c[name] for name in OPTIONAL_METADATA)
_TAIL = (_c.payload_digest, _c.prev_hash, _c.hash)


def wire_query(after: int, limit: int) -> Select[Any]:
    """The rows after ``after`` in position order, the payload as its stored text."""
    return (select(*_SCALARS, cast(_c.payload, Text), *_METADATA, *_OPTIONAL, *_TAIL)
            .where(_c.position > after).order_by(_c.position).limit(limit))


def wire_event(row: Sequence[Any]) -> WireEvent:
    """A row of ``wire_query`` as the message the relay sends."""
    position, event_id, stream, seq, kind, version, payload = row[:7]
    meta = row[7:16]
    optional = row[16:16 + len(_OPTIONAL)]
    digest, prev_hash, chain_hash = row[16 + len(_OPTIONAL):]
    extra = "".join(f',"{name}":{_text(value)}' for name, value in zip(OPTIONAL_METADATA, optional,
                                                                        strict=True)
                    if value is not None)
    value = (
        f'{{"event_id":"{event_id}","stream_id":{_text(stream)},'
        f'"stream_seq":{int(seq)},"position":{int(position)},"type":{_text(kind)},'
        f'"schema_version":{int(version)},"payload":{payload},"metadata":{{'
        f'"occurred_at":{_time(meta[0])},"recorded_at":{_time(meta[1])},'
        f'"actor":{_text(meta[2])},"tenant":{_text(meta[3])},"specialist":{_text(meta[4])},'
        f'"adapter_version":{_text(meta[5])},"contract":{_text(meta[6])},'
        f'"causation_id":{_uuid(meta[7])},"correlation_id":{_uuid(meta[8])}{extra}}},'
        f'"payload_digest":{_text(digest)},"prev_hash":{_text(prev_hash)},"hash":{_text(chain_hash)}}}'
    )
    return WireEvent(int(position), stream, kind, int(version), value.encode())


def _text(value: str | None) -> str:
    return "null" if value is None else encode_basestring(value)


def _uuid(value: uuid.UUID | None) -> str:
    return "null" if value is None else f'"{value}"'


def _time(value: datetime | None) -> str:
    return "null" if value is None else f'"{iso_time(value)}"'
