"""The append-only event store: port and its SQL adapter (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from psycopg.types.json import Json
from sqlalchemy import Uuid, any_, bindparam, func, select, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Connection, Engine

from events.catalogue import upcast
from events.chain import GENESIS_HASH, VerifyReport, chain_hash, payload_digest, verify_chain
from events.errors import EventIdConflict, WrongExpectedSeq
from events.model import EventMetadata, NewEvent, RecordedEvent, utc
from events.tables import events as events_table
from hcp.db import is_postgres

# Any constant works; it only has to be the same for every writer of this database.
APPEND_LOCK_KEY = 0x4843504C4F47  # "HCPLOG"


@dataclass(frozen=True)
class Appended:
    event: RecordedEvent
    created: bool  # False when the event_id was already stored with the same content


class EventStore(ABC):
    """The log: append batches atomically, read by id, stream or global position."""

    @abstractmethod
    def append(self, batch: Sequence[NewEvent], conn: Connection | None = None) -> list[Appended]:
        """Append all of ``batch`` or nothing.

        Args:
            batch: events in the order they should take positions.
            conn: an open transaction to join (so other rows commit with the events).
        Returns:
            One entry per input, in order; duplicates (same id, same content) come back
            as the stored event with ``created=False``.
        Raises:
            EventIdConflict: an event_id exists with different content.
            WrongExpectedSeq: an ``expected_seq`` does not match the stream.
        """

    @abstractmethod
    def get(self, event_id: uuid.UUID) -> RecordedEvent | None: ...

    @abstractmethod
    def read_stream(self, stream_id: str, after_seq: int = 0, limit: int = 1000) -> list[RecordedEvent]: ...

    @abstractmethod
    def read_all(self, after: int = 0, limit: int = 1000, raw: bool = False) -> list[RecordedEvent]:
        """Events with position > ``after`` in position order; ``raw`` skips upcasting."""

    @abstractmethod
    def head(self) -> int:
        """The last committed position (0 for an empty log)."""

    def iter_all(self, after: int = 0, page: int = 5000, raw: bool = False) -> Iterator[RecordedEvent]:
        while batch := self.read_all(after, page, raw):
            yield from batch
            after = batch[-1].position

    def verify(self) -> VerifyReport:
        """Re-check the whole chain from the stored bytes (no upcasting)."""
        return verify_chain(self.iter_all(raw=True))


class SqlEventStore(EventStore):
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def append(self, batch: Sequence[NewEvent], conn: Connection | None = None) -> list[Appended]:
        if conn is not None:
            return self._append(conn, batch)
        with self.engine.begin() as own:
            return self._append(own, batch)

    def _append(self, conn: Connection, batch: Sequence[NewEvent]) -> list[Appended]:
        self._lock_log(conn)
        existing = self._existing(conn, [e.event_id for e in batch])
        position, prev_hash = self._log_head(conn)
        stream_seqs = self._stream_seqs(conn, list(dict.fromkeys(e.stream_id for e in batch)))
        results: list[Appended] = []
        rows: list[dict[str, Any]] = []
        now = datetime.now(UTC)
        for index, new in enumerate(batch):
            stored = existing.get(new.event_id)
            if stored is not None:
                if not _same_content(stored, new):
                    raise EventIdConflict(new.event_id, index)
                results.append(Appended(stored, created=False))
                continue
            current = stream_seqs[new.stream_id]
            if new.expected_seq is not None and new.expected_seq != current:
                raise WrongExpectedSeq(new.stream_id, new.expected_seq, current, index)
            position += 1
            stream_seqs[new.stream_id] = current + 1
            event = _record(new, position, current + 1, now, prev_hash)
            prev_hash = event.hash
            existing[new.event_id] = event  # a repeat later in the same batch is a duplicate
            results.append(Appended(event, created=True))
            rows.append(_to_row(event))
        if rows and conn.dialect.driver == "psycopg":
            _copy_rows(conn, rows)
        elif rows:
            conn.execute(events_table.insert(), rows)
        return results

    def _lock_log(self, conn: Connection) -> None:
        # Positions must be gapless and in commit order, or a follower tailing "position >
        # checkpoint" could pass 7 while 6 is still uncommitted and never see 6. One
        # transaction-scoped advisory lock serialises appenders until commit; readers are
        # not blocked. (SQLite: the engine's BEGIN IMMEDIATE already holds the write lock.)
        if is_postgres(conn):
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": APPEND_LOCK_KEY})

    def _existing(self, conn: Connection, ids: list[uuid.UUID]) -> dict[uuid.UUID, RecordedEvent]:
        if not ids:
            return {}
        if is_postgres(conn):
            # One array parameter, not an IN list expanded to N parameters: expanding cost
            # ~10 ms of client-side work per 200-event batch.
            rows = conn.execute(_PG_EXISTING, {"ids": list(set(ids))})
        else:
            rows = conn.execute(select(events_table).where(events_table.c.event_id.in_(set(ids))))
        return {row.event_id: event_from_row(row._mapping) for row in rows}

    def _log_head(self, conn: Connection) -> tuple[int, str]:
        row = conn.execute(
            select(events_table.c.position, events_table.c.hash)
            .order_by(events_table.c.position.desc()).limit(1)
        ).first()
        return (row.position, row.hash) if row else (0, GENESIS_HASH)

    def _stream_seqs(self, conn: Connection, stream_ids: list[str]) -> dict[str, int]:
        # One round trip for the whole batch, not one per stream (that cost 70% of a
        # 200-event append when every event was on its own stream).
        if is_postgres(conn):
            rows = conn.execute(_PG_STREAM_HEADS, {"ids": stream_ids})
        else:
            rows = conn.execute(_SQLITE_STREAM_HEADS, {"ids": json.dumps(stream_ids)})
        heads = {row[0]: int(row[1] or 0) for row in rows}
        return {stream_id: heads.get(stream_id, 0) for stream_id in stream_ids}

    def get(self, event_id: uuid.UUID) -> RecordedEvent | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(events_table).where(events_table.c.event_id == event_id)).first()
        return upcast_event(event_from_row(row._mapping)) if row else None

    def read_stream(self, stream_id: str, after_seq: int = 0, limit: int = 1000) -> list[RecordedEvent]:
        query = (
            select(events_table)
            .where(events_table.c.stream_id == stream_id, events_table.c.stream_seq > after_seq)
            .order_by(events_table.c.stream_seq).limit(limit)
        )
        with self.engine.connect() as conn:
            return [upcast_event(event_from_row(r._mapping)) for r in conn.execute(query)]

    def read_all(self, after: int = 0, limit: int = 1000, raw: bool = False) -> list[RecordedEvent]:
        query = (
            select(events_table).where(events_table.c.position > after)
            .order_by(events_table.c.position).limit(limit)
        )
        with self.engine.connect() as conn:
            events = [event_from_row(r._mapping) for r in conn.execute(query)]
        return events if raw else [upcast_event(e) for e in events]

    def head(self) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.max(events_table.c.position))).scalar() or 0)


_PG_EXISTING = select(events_table).where(
    events_table.c.event_id == any_(bindparam("ids", type_=ARRAY(Uuid)))
)
_COPY_COLUMNS = [column.name for column in events_table.columns]
_COPY_EVENTS = f"COPY events ({', '.join(_COPY_COLUMNS)}) FROM STDIN"


def _copy_rows(conn: Connection, rows: list[dict[str, Any]]) -> None:
    # COPY inside the append transaction: a third of the per-row cost of a multi-row
    # INSERT through SQLAlchemy, and it commits (or not) with the rest of the batch.
    raw = conn.connection.driver_connection
    assert raw is not None
    with raw.cursor() as cursor, cursor.copy(_COPY_EVENTS) as copy:
        for row in rows:
            copy.write_row([Json(row["payload"]) if name == "payload" else row[name]
                            for name in _COPY_COLUMNS])


# Each stream's head: one backward step on the (stream_id, stream_seq) unique index.
_PG_STREAM_HEADS = text(
    "SELECT ids.stream_id, (SELECT e.stream_seq FROM events e WHERE e.stream_id = ids.stream_id "
    "ORDER BY e.stream_seq DESC LIMIT 1) FROM unnest(CAST(:ids AS text[])) AS ids(stream_id)"
)
_SQLITE_STREAM_HEADS = text(
    "SELECT ids.value, (SELECT e.stream_seq FROM events e WHERE e.stream_id = ids.value "
    "ORDER BY e.stream_seq DESC LIMIT 1) FROM json_each(:ids) AS ids"
)


def _record(new: NewEvent, position: int, seq: int, now: datetime, prev_hash: str) -> RecordedEvent:
    unhashed = RecordedEvent(
        event_id=new.event_id, stream_id=new.stream_id, stream_seq=seq, position=position,
        type=new.type, schema_version=new.schema_version, payload=new.payload,
        metadata=new.metadata, recorded_at=now, payload_digest=payload_digest(new.payload),
        prev_hash=prev_hash, hash="",
    )
    return replace(unhashed, hash=chain_hash(prev_hash, unhashed))


def _same_content(stored: RecordedEvent, new: NewEvent) -> bool:
    return (
        stored.stream_id == new.stream_id
        and stored.type == new.type
        and stored.schema_version == new.schema_version
        and stored.payload_digest == payload_digest(new.payload)
        and _comparable(stored.metadata) == _comparable(new.metadata)
    )


def _comparable(meta: EventMetadata) -> EventMetadata:
    return replace(meta, occurred_at=utc(meta.occurred_at) if meta.occurred_at else None)


def _to_row(event: RecordedEvent) -> dict[str, Any]:
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
        "payload_digest": event.payload_digest, "prev_hash": event.prev_hash, "hash": event.hash,
    }


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
        ),
        recorded_at=utc(row["recorded_at"]), payload_digest=row["payload_digest"],
        prev_hash=row["prev_hash"], hash=row["hash"],
    )


def upcast_event(event: RecordedEvent) -> RecordedEvent:
    """The event with its payload brought to the current schema version."""
    version, payload = upcast(event.type, event.schema_version, event.payload)
    if version == event.schema_version:
        return event
    return replace(event, schema_version=version, payload=payload)
