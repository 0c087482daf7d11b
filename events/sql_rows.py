"""The events table's rows as value objects and back (the SQL adapters' one row mapping)."""

from __future__ import annotations

from typing import Any

from events.model import EventMetadata, NewEvent, RecordedEvent
from events.tables import events as events_table
from kernel.clock import utc

COLUMNS = tuple(column.name for column in events_table.columns)

# The COPY's column order: what is known before numbering first (``copy_head``, built
# outside the writer lock), then what the numbering fills in (``copy_line``).
HEAD_COLUMNS = ("event_id", "stream_id", "type", "schema_version", "payload", "occurred_at",
                "actor", "tenant", "claimed_actor", "specialist", "adapter_version", "contract",
                "causation_id", "correlation_id", "payload_digest")
NUMBERED_COLUMNS = ("position", "stream_seq", "recorded_at", "prev_hash", "hash")
COPY_COLUMNS = HEAD_COLUMNS + NUMBERED_COLUMNS
assert sorted(COPY_COLUMNS) == sorted(COLUMNS), "a column of the events table is not copied"

_NULL = "\\N"
_ESCAPES = str.maketrans({"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"})


def to_row(event: RecordedEvent) -> dict[str, Any]:
    """The row of an event as SQLAlchemy inserts it (the payload as an object)."""
    meta = event.metadata
    return {
        "position": event.position, "event_id": event.event_id, "stream_id": event.stream_id,
        "stream_seq": event.stream_seq, "type": event.type,
        "schema_version": event.schema_version, "payload": event.payload,
        # UTC before storing: SQLite keeps the wall-clock digits and drops the offset, so
        # a +02:00 time would read back two hours off (and fail its chain hash).
        "occurred_at": utc(meta.occurred_at) if meta.occurred_at else None,
        "recorded_at": event.recorded_at, "actor": meta.actor,
        "tenant": meta.tenant, "specialist": meta.specialist,
        "adapter_version": meta.adapter_version, "contract": meta.contract,
        "causation_id": meta.causation_id, "correlation_id": meta.correlation_id,
        "claimed_actor": meta.claimed_actor,
        "payload_digest": event.payload_digest, "prev_hash": event.prev_hash, "hash": event.hash,
    }


def copy_row(event: RecordedEvent, payload_json: str) -> tuple[Any, ...]:
    """The COPY row of an event, in ``COLUMNS`` order, the payload as its canonical JSON:
    the column is ``json``, kept verbatim, so the stored text is what was digested."""
    meta = event.metadata
    return (event.position, event.event_id, event.stream_id, event.stream_seq, event.type,
            event.schema_version, payload_json,
            utc(meta.occurred_at) if meta.occurred_at else None, event.recorded_at, meta.actor,
            meta.tenant, meta.claimed_actor, meta.specialist, meta.adapter_version, meta.contract,
            meta.causation_id, meta.correlation_id, event.payload_digest, event.prev_hash, event.hash)


def copy_head(new: NewEvent, id_text: str, payload_json: str, digest: str,
              occurred_at: str | None) -> str:
    """The COPY text (PostgreSQL's text format) of ``HEAD_COLUMNS``, each followed by a
    tab; for events whose fields are str, None or UUID and whose schema_version is an
    int (what the chain's template takes). The payload is its canonical JSON, which the
    ``json`` column keeps verbatim, so the stored text is what was digested.
    ``occurred_at``: ``iso_time(meta.occurred_at)`` (UTC), None when not set."""
    meta = new.metadata
    return "\t".join((
        _escaped(id_text), _copy_text(new.stream_id), _copy_text(new.type), str(new.schema_version),
        _escaped(payload_json), _NULL if occurred_at is None else occurred_at,
        _copy_text(meta.actor), _copy_text(meta.tenant), _copy_text(meta.claimed_actor),
        _copy_text(meta.specialist), _copy_text(meta.adapter_version), _copy_text(meta.contract),
        _copy_text(meta.causation_id), _copy_text(meta.correlation_id), digest, "",
    ))


def copy_line(head: str, event: RecordedEvent, recorded_at: str) -> str:
    """An event's whole COPY line: its ``copy_head`` and the numbered columns
    (``recorded_at``: ``iso_time`` of the batch's time)."""
    return f"{head}{event.position:d}\t{event.stream_seq:d}\t{recorded_at}\t{event.prev_hash}\t{event.hash}\n"


def _copy_text(value: object) -> str:
    return _NULL if value is None else _escaped(str(value))


def _escaped(text: str) -> str:
    # Most fields have nothing to escape: four scans in C beat a translate every time.
    if "\\" in text or "\n" in text or "\r" in text or "\t" in text:
        return text.translate(_ESCAPES)
    return text


def event_from_row(row: Any) -> RecordedEvent:
    """A stored row (a mapping of the events table) as the value object, as stored."""
    return RecordedEvent(
        event_id=row["event_id"], stream_id=row["stream_id"], stream_seq=row["stream_seq"],
        position=row["position"], type=row["type"], schema_version=row["schema_version"],
        payload=row["payload"],
        metadata=EventMetadata(
            occurred_at=utc(row["occurred_at"]) if row["occurred_at"] else None,
            actor=row["actor"], tenant=row["tenant"], specialist=row["specialist"],
            adapter_version=row["adapter_version"], contract=row["contract"],
            causation_id=row["causation_id"], correlation_id=row["correlation_id"],
            claimed_actor=row["claimed_actor"],
        ),
        recorded_at=utc(row["recorded_at"]), payload_digest=row["payload_digest"],
        prev_hash=row["prev_hash"], hash=row["hash"],
    )
