"""The event store's SQL adapter, for SQLite and PostgreSQL (see events/store.py)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from sqlalchemy import BigInteger, String, Uuid, and_, any_, bindparam, func, select, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Connection, Engine

from events.catalogue import upcast_event
from events.chain import GENESIS_HASH
from events.model import EventMetadata, NewEvent, RecordedEvent
from events.numbering import number_batch
from events.store import Appended, Closer, EventStore
from events.tables import events as events_table
from kernel.clock import utc, utcnow
from kernel.db import is_postgres, reading
from kernel.sql import insert_rows, lock_writers

# Any constant works; it only has to be the same for every writer of this database.
APPEND_LOCK_KEY = 0x4843504C4F47  # "HCPLOG"
ID_CHUNK = 500  # ids per IN (...) on SQLite


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
        results = number_batch(batch, existing, position, prev_hash, stream_seqs, utcnow())
        rows = [_to_row(a.event) for a in results if a.created]
        insert_rows(conn, events_table, rows, json_columns=("payload",))
        return results

    def _lock_log(self, conn: Connection) -> None:
        # Positions must be gapless and in commit order, or a follower tailing "position >
        # checkpoint" could pass 7 while 6 is still uncommitted and never see 6. One
        # transaction-scoped advisory lock serialises appenders until commit; readers are
        # not blocked. (SQLite: the engine's BEGIN IMMEDIATE already holds the write lock.)
        lock_writers(conn, APPEND_LOCK_KEY)

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

    def read_types(self, types: Collection[str], after: int = 0, limit: int = 1000) -> list[RecordedEvent]:
        e = events_table.c
        query = (select(events_table).where(e.type.in_(list(types)), e.position > after)
                 .order_by(e.position).limit(limit))
        with self.engine.connect() as conn:
            return [upcast_event(event_from_row(r._mapping)) for r in conn.execute(query)]

    def streams_of_tenant(self, tenant: str) -> list[str]:
        query = (select(events_table.c.stream_id).where(events_table.c.tenant == tenant)
                 .distinct().order_by(events_table.c.stream_id))
        with self.engine.connect() as conn:
            return list(conn.execute(query).scalars())

    def head(self) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.max(events_table.c.position))).scalar() or 0)

    def get_many(self, event_ids: Iterable[uuid.UUID | str],
                 conn: Connection | None = None) -> dict[str, RecordedEvent]:
        ids = sorted({uuid.UUID(str(i)) for i in event_ids})
        found: dict[str, RecordedEvent] = {}
        with reading(self.engine, conn) as c:
            for start in range(0, len(ids), ID_CHUNK):
                chunk = ids[start:start + ID_CHUNK]
                for row in c.execute(select(events_table).where(events_table.c.event_id.in_(chunk))):
                    event = upcast_event(event_from_row(row._mapping))
                    found[str(event.event_id)] = event
        return found

    def read_windows(self, reads: dict[str, tuple[int, int]],
                     episode_end: str) -> dict[str, list[RecordedEvent]]:
        if not reads:
            return {}
        e = events_table.c
        if self._postgres:
            windows = _PG_WINDOWS.bindparams(ids=list(reads), firsts=[f for f, _ in reads.values()],
                                             lasts=[stop for _, stop in reads.values()],
                                             type=episode_end)
        else:
            pairs = json.dumps([[stream, first, stop] for stream, (first, stop) in reads.items()])
            windows = _SQLITE_WINDOWS.bindparams(pairs=pairs, type=episode_end)
        w = windows.columns(stream_id=String, start=BigInteger, stop=BigInteger).subquery("w")
        query = (select(events_table)
                 .join(w, and_(e.stream_id == w.c.stream_id, e.stream_seq > w.c.start,
                               e.stream_seq <= w.c.stop))
                 .order_by(e.stream_id, e.stream_seq))
        found: dict[str, list[RecordedEvent]] = {}
        with self.engine.connect() as conn:
            for row in conn.execute(query):
                event = upcast_event(event_from_row(row._mapping))
                found.setdefault(event.stream_id, []).append(event)
        return found

    def closers(self, types: Collection[str], after: int, upto: int, limit: int,
                newest_first: bool = False) -> list[Closer]:
        e = events_table.c
        order = e.position.desc() if newest_first else e.position
        query = (select(e.position, e.stream_id, e.stream_seq)
                 .where(e.type.in_(list(types)), e.position > after, e.position <= upto)
                 .order_by(order).limit(limit))
        with self.engine.connect() as conn:
            return [Closer(int(r[0]), str(r[1]), int(r[2])) for r in conn.execute(query)]

    @property
    def _postgres(self) -> bool:
        return is_postgres(self.engine)


_PG_EXISTING = select(events_table).where(
    events_table.c.event_id == any_(bindparam("ids", type_=ARRAY(Uuid)))
)
# Each stream's head: one backward step on the (stream_id, stream_seq) unique index.
_PG_STREAM_HEADS = text(
    "SELECT ids.stream_id, (SELECT e.stream_seq FROM events e WHERE e.stream_id = ids.stream_id "
    "ORDER BY e.stream_seq DESC LIMIT 1) FROM unnest(CAST(:ids AS text[])) AS ids(stream_id)"
)
_SQLITE_STREAM_HEADS = text(
    "SELECT ids.value, (SELECT e.stream_seq FROM events e WHERE e.stream_id = ids.value "
    "ORDER BY e.stream_seq DESC LIMIT 1) FROM json_each(:ids) AS ids"
)
# A subject never spans an episode end, so a window starts after the last one before
# the first closing event: bounded reads, every stream of a batch in one statement.
_PG_WINDOWS = text(
    "SELECT w.stream_id, COALESCE((SELECT max(e.stream_seq) FROM events e "
    "WHERE e.stream_id = w.stream_id AND e.stream_seq < w.first AND e.type = :type), 0) AS start, "
    "w.last AS stop FROM unnest(CAST(:ids AS text[]), CAST(:firsts AS bigint[]), "
    "CAST(:lasts AS bigint[])) AS w(stream_id, first, last)"
)
_SQLITE_WINDOWS = text(
    "SELECT w.stream_id, COALESCE((SELECT max(e.stream_seq) FROM events e "
    "WHERE e.stream_id = w.stream_id AND e.stream_seq < w.first AND e.type = :type), 0) AS start, "
    "w.last AS stop FROM (SELECT json_extract(value, '$[0]') AS stream_id, "
    "json_extract(value, '$[1]') AS first, json_extract(value, '$[2]') AS last "
    "FROM json_each(:pairs)) AS w"
)


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
