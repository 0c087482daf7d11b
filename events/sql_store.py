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
from events.numbering import Prepared, number_batch, prepare_batch
from events.store import Appended, ChainLink, Closer, EventStore
from events.tables import events as events_table
from kernel.clock import utc, utcnow
from kernel.db import is_postgres, reading
from kernel.sql import copy_rows, insert_rows, lock_writers, pipelined

# Any constant works; it only has to be the same for every writer of this database.
APPEND_LOCK_KEY = 0x4843504C4F47  # "HCPLOG"
ID_CHUNK = 500  # ids per IN (...) on SQLite


class SqlEventStore(EventStore):
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def append(self, batch: Sequence[NewEvent], conn: Connection | None = None) -> list[Appended]:
        # Digests and hash templates first: none of it needs the lock, so none of it
        # holds up the other writers.
        prepared = prepare_batch(batch)
        if conn is not None:
            return self._append(conn, batch, prepared)
        with self.engine.begin() as own:
            return self._append(own, batch, prepared)

    def _append(self, conn: Connection, batch: Sequence[NewEvent],
                prepared: list[Prepared]) -> list[Appended]:
        ids, streams = [e.event_id for e in batch], list(dict.fromkeys(e.stream_id for e in batch))
        if conn.dialect.driver == "psycopg":
            existing, (position, prev_hash), heads = self._locked_reads_pipelined(conn, ids, streams)
        else:
            self._lock_log(conn)
            existing = self._existing(conn, ids)
            position, prev_hash = self._log_head(conn)
            heads = self._stream_heads(conn, streams)
        seqs = {stream: seq for stream, (seq, _) in heads.items()}
        owners = {stream: tenant for stream, (_, tenant) in heads.items()}
        results = number_batch(batch, existing, position, prev_hash, seqs, utcnow(), owners, prepared)
        if conn.dialect.driver == "psycopg":
            texts = {p.new.event_id: p.payload_json for p in prepared}
            copy_rows(conn, events_table.name, _COLUMNS,
                      (_copy_row(a.event, texts[a.event.event_id]) for a in results if a.created))
        else:
            insert_rows(conn, events_table, [_to_row(a.event) for a in results if a.created])
        return results

    def _locked_reads_pipelined(self, conn: Connection, ids: list[uuid.UUID], streams: list[str],
                                ) -> tuple[dict[uuid.UUID, RecordedEvent], tuple[int, str],
                                           dict[str, tuple[int, str | None]]]:
        """The writer lock, the batch's stored duplicates, the log head and the stream
        heads (with their tenants), in one round trip instead of four."""
        _, stored, head, heads = pipelined(conn, [
            ("SELECT pg_advisory_xact_lock(%s)", (APPEND_LOCK_KEY,)),
            (_PIPE_EXISTING, (list(set(ids)),)),
            (_PIPE_HEAD, None),
            (_PIPE_STREAM_HEADS, (streams,)),
        ])
        existing = {row[1]: event_from_row(dict(zip(_COLUMNS, row, strict=True))) for row in stored}
        found = {row[0]: (int(row[1] or 0), row[2]) for row in heads}
        return (existing, (int(head[0][0]), str(head[0][1])) if head else (0, GENESIS_HASH),
                {stream: found.get(stream, (0, None)) for stream in streams})

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

    def _stream_heads(self, conn: Connection,
                      stream_ids: list[str]) -> dict[str, tuple[int, str | None]]:
        """Each stream's last seq (0: new) and the tenant of its last event."""
        # One round trip for the whole batch, not one per stream (that cost 70% of a
        # 200-event append when every event was on its own stream).
        if is_postgres(conn):
            rows = conn.execute(_PG_STREAM_HEADS, {"ids": stream_ids})
        else:
            rows = conn.execute(_SQLITE_STREAM_HEADS, {"ids": json.dumps(stream_ids)})
        heads = {row[0]: (int(row[1] or 0), row[2]) for row in rows}
        return {stream_id: heads.get(stream_id, (0, None)) for stream_id in stream_ids}

    def get(self, event_id: uuid.UUID, tenant: str | None = None) -> RecordedEvent | None:
        query = _of_tenant(select(events_table).where(events_table.c.event_id == event_id), tenant)
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        return upcast_event(event_from_row(row._mapping)) if row else None

    def read_stream(self, stream_id: str, after_seq: int = 0, limit: int = 1000,
                    tenant: str | None = None) -> list[RecordedEvent]:
        query = _of_tenant(
            select(events_table)
            .where(events_table.c.stream_id == stream_id, events_table.c.stream_seq > after_seq)
            .order_by(events_table.c.stream_seq).limit(limit), tenant)
        with self.engine.connect() as conn:
            return [upcast_event(event_from_row(r._mapping)) for r in conn.execute(query)]

    def read_all(self, after: int = 0, limit: int = 1000, raw: bool = False,
                 tenant: str | None = None) -> list[RecordedEvent]:
        query = _of_tenant(
            select(events_table).where(events_table.c.position > after)
            .order_by(events_table.c.position).limit(limit), tenant)
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

    def head(self, tenant: str | None = None) -> int:
        query = _of_tenant(select(func.max(events_table.c.position)), tenant)
        with self.engine.connect() as conn:
            return int(conn.execute(query).scalar() or 0)

    def get_many(self, event_ids: Iterable[uuid.UUID | str], conn: Connection | None = None,
                 raw: bool = False) -> dict[str, RecordedEvent]:
        ids = sorted({uuid.UUID(str(i)) for i in event_ids})
        found: dict[str, RecordedEvent] = {}
        with reading(self.engine, conn) as c:
            for start in range(0, len(ids), ID_CHUNK):
                chunk = ids[start:start + ID_CHUNK]
                for row in c.execute(select(events_table).where(events_table.c.event_id.in_(chunk))):
                    event = event_from_row(row._mapping)
                    found[str(event.event_id)] = event if raw else upcast_event(event)
        return found

    def chain_link(self, event_id: uuid.UUID, conn: Connection | None = None) -> ChainLink | None:
        e = events_table.c
        with reading(self.engine, conn) as c:
            row = c.execute(select(e.position, e.prev_hash, e.hash).where(e.event_id == event_id)).first()
        return ChainLink(int(row[0]), str(row[1]), str(row[2])) if row else None

    def chain_links(self, after: int, limit: int, conn: Connection | None = None) -> list[ChainLink]:
        e = events_table.c
        query = (select(e.position, e.prev_hash, e.hash).where(e.position > after)
                 .order_by(e.position).limit(limit))
        with reading(self.engine, conn) as c:
            return [ChainLink(int(r[0]), str(r[1]), str(r[2])) for r in c.execute(query)]

    def of_types(self, types: Collection[str], streams: Collection[str] | None = None,
                 raw: bool = True) -> list[RecordedEvent]:
        e = events_table.c
        base = select(events_table).where(e.type.in_(sorted(set(types))))
        # Several queries only when there are more streams than one IN list should carry.
        names = sorted(set(streams)) if streams is not None else None
        queries = ([base] if names is None else [base.where(e.stream_id.in_(names[i:i + ID_CHUNK]))
                                                 for i in range(0, len(names), ID_CHUNK)])
        found: list[RecordedEvent] = []
        with self.engine.connect() as conn:
            for query in queries:
                found += [event_from_row(r._mapping) for r in conn.execute(query.order_by(e.position))]
        found.sort(key=lambda event: event.position)
        return found if raw else [upcast_event(event) for event in found]

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
                newest_first: bool = False, tenant: str | None = None) -> list[Closer]:
        e = events_table.c
        order = e.position.desc() if newest_first else e.position
        query = (select(e.position, e.stream_id, e.stream_seq)
                 .where(e.type.in_(list(types)), e.position > after, e.position <= upto)
                 .order_by(order).limit(limit))
        query = _of_tenant(query, tenant)
        with self.engine.connect() as conn:
            return [Closer(int(r[0]), str(r[1]), int(r[2])) for r in conn.execute(query)]

    @property
    def _postgres(self) -> bool:
        return is_postgres(self.engine)


_COLUMNS = tuple(column.name for column in events_table.columns)
_PIPE_EXISTING = f"SELECT {', '.join(_COLUMNS)} FROM events WHERE event_id = ANY(%s)"
_PIPE_HEAD = "SELECT position, hash FROM events ORDER BY position DESC LIMIT 1"
_PIPE_STREAM_HEADS = (
    "SELECT ids.stream_id, h.stream_seq, h.tenant FROM unnest(%s::text[]) AS ids(stream_id) "
    "LEFT JOIN LATERAL (SELECT e.stream_seq, e.tenant FROM events e WHERE e.stream_id = ids.stream_id "
    "ORDER BY e.stream_seq DESC LIMIT 1) AS h ON true"
)
_PG_EXISTING = select(events_table).where(
    events_table.c.event_id == any_(bindparam("ids", type_=ARRAY(Uuid)))
)
# Each stream's head (seq and tenant): one backward step on the (stream_id, stream_seq)
# unique index.
_PG_STREAM_HEADS = text(
    "SELECT ids.stream_id, h.stream_seq, h.tenant FROM unnest(CAST(:ids AS text[])) AS ids(stream_id) "
    "LEFT JOIN LATERAL (SELECT e.stream_seq, e.tenant FROM events e WHERE e.stream_id = ids.stream_id "
    "ORDER BY e.stream_seq DESC LIMIT 1) AS h ON true"
)
_SQLITE_STREAM_HEADS = text(
    "SELECT ids.value, h.stream_seq, h.tenant FROM json_each(:ids) AS ids "
    "LEFT JOIN events h ON h.stream_id = ids.value AND h.stream_seq = "
    "(SELECT max(e.stream_seq) FROM events e WHERE e.stream_id = ids.value)"
)


def _of_tenant(query: Any, tenant: str | None) -> Any:
    """``query`` limited to one tenant's events; ``None``: every tenant's (operators)."""
    return query if tenant is None else query.where(events_table.c.tenant == tenant)
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
        "claimed_actor": meta.claimed_actor,
        "payload_digest": event.payload_digest, "prev_hash": event.prev_hash, "hash": event.hash,
    }


def _copy_row(event: RecordedEvent, payload_json: str) -> tuple[Any, ...]:
    """The COPY row of an event, in ``_COLUMNS`` order; the payload as its canonical JSON
    (the column is ``json``: kept verbatim, so a reader can re-digest the stored text)."""
    meta = event.metadata
    return (event.position, event.event_id, event.stream_id, event.stream_seq, event.type,
            event.schema_version, payload_json,
            utc(meta.occurred_at) if meta.occurred_at else None, event.recorded_at, meta.actor,
            meta.tenant, meta.claimed_actor, meta.specialist, meta.adapter_version, meta.contract,
            meta.causation_id, meta.correlation_id, event.payload_digest, event.prev_hash, event.hash)


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
