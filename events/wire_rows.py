"""Stored rows straight to their Kafka value: the relay's read path.

``event_to_bytes(event_from_row(row))`` parses the payload's stored JSON into Python
objects, builds the event and its wire dict, and encodes everything again: about half of
the relay's CPU per message. The payload column already holds the event's payload as
JSON text (on PostgreSQL, the canonical JSON that was digested, kept verbatim by the
``json`` type), and every other field is a scalar, so the value can be assembled from
the row as text. The result is the same wire form, field for field and in the same key
order (``RecordedEvent.to_json``); where the payload was stored as canonical JSON it is
byte-for-byte ``event_to_bytes`` (tests/integration/test_wire_rows.py).

On PostgreSQL the server assembles the value (``read_wire_postgres``): one text column
per row instead of 22, and no Python formatting per field; that was about half of the
relay's CPU per message under load. Every piece is written exactly as the Python path
writes it: ``to_json(text)`` escapes as ``json.encoder.encode_basestring`` does (``"``,
``\\``, ``\\b\\f\\n\\r\\t``, other control characters as ``\\u00xx`` in lowercase,
everything else verbatim), a UUID's text is ``str(uuid)``, and times are written in UTC
with six fractional digits, as ``iso_time`` does.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from json.encoder import encode_basestring
from typing import Any, NamedTuple

from sqlalchemy import Select, Text, cast, select
from sqlalchemy.engine import Connection

from events.model import OPTIONAL_METADATA, iso_time
from events.tables import events as events_table


class WireEvent(NamedTuple):
    """What the relay publishes of one stored event (a tuple: one is built per message)."""

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


def _pg_text(column: str) -> str:
    return f"COALESCE(to_json({column})::text, 'null')"  # a UUID's JSON is its text, quoted


def _pg_time(column: str) -> str:
    return (f"""CASE WHEN {column} IS NULL THEN 'null' ELSE concat('"', to_char({column} AT TIME ZONE """
            f"""'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '+00:00"') END""")


def _pg_optional(name: str) -> str:
    return f"""CASE WHEN {name} IS NULL THEN '' ELSE concat(',"{name}":', to_json({name})::text) END"""


# The value as ``wire_event`` writes it, field for field (the column names are the events
# table's, as in ``events.tables``); one concat() allocates the text once.
_PG_VALUE = "concat(" + ", ".join([
    """'{"event_id":"'""", "event_id::text", """'","stream_id":'""", _pg_text("stream_id"),
    """',"stream_seq":'""", "stream_seq::text", """',"position":'""", "position::text",
    """',"type":'""", _pg_text("type"), """',"schema_version":'""", "schema_version::text",
    """',"payload":'""", "payload::text", """',"metadata":{"occurred_at":'""", _pg_time("occurred_at"),
    """',"recorded_at":'""", _pg_time("recorded_at"), """',"actor":'""", _pg_text("actor"),
    """',"tenant":'""", _pg_text("tenant"), """',"specialist":'""", _pg_text("specialist"),
    """',"adapter_version":'""", _pg_text("adapter_version"), """',"contract":'""", _pg_text("contract"),
    """',"causation_id":'""", _pg_text("causation_id"), """',"correlation_id":'""",
    _pg_text("correlation_id"), *[_pg_optional(name) for name in OPTIONAL_METADATA],
    """'},"payload_digest":'""", _pg_text("payload_digest"), """',"prev_hash":'""", _pg_text("prev_hash"),
    """',"hash":'""", _pg_text("hash"), """'}'""",
]) + ")"
PG_WIRE_SQL = (f"SELECT position, stream_id, type, schema_version, {_PG_VALUE} FROM events "  # noqa: S608 (constants only)
               "WHERE position > %s ORDER BY position LIMIT %s")


def read_wire_postgres(conn: Connection, after: int, limit: int) -> list[WireEvent]:
    """``wire_query`` + ``wire_event`` with the value assembled by PostgreSQL (psycopg),
    on the driver's cursor: the relay reads every page this way."""
    raw = conn.connection.driver_connection
    assert raw is not None
    with raw.cursor() as cursor:
        rows = cursor.execute(PG_WIRE_SQL, (after, limit)).fetchall()
    return [WireEvent(position, stream, kind, version, value.encode())
            for position, stream, kind, version, value in rows]
