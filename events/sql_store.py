"""The event store's SQL adapter, for SQLite and PostgreSQL (see events/store.py)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Collection, Generator, Iterable, Iterator, Sequence
from typing import Any

from sqlalchemy import BigInteger, String, and_, bindparam, func, or_, select, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql.elements import BindParameter

from events.catalogue import upcast_event
from events.errors import EventLogError
from events.log_share import SHARE_SQL, LogShare, share_parameters
from events.model import NewEvent, RecordedEvent
from events.numbering import Prepared, prepare_batch
from events.sql_append import append_batches, append_learning
from events.sql_rows import event_from_row
from events.store import Appended, ChainLink, Closer, EventStore, Tail, end_types
from events.stream_heads import StreamHeads
from events.tables import events as events_table
from events.wire_rows import WireEvent, read_wire_postgres, wire_event, wire_query
from kernel.db import is_postgres, is_psycopg, reading
from kernel.sql import head as last_position

__all__ = ["SqlEventStore", "event_from_row"]

ID_CHUNK = 500  # ids per IN (...) on SQLite
# Rows a scan fetches at a time: 32 payloads of the largest size taken (256 KiB) are 8 MiB.
SCAN_ROWS = 32


class SqlEventStore(EventStore):
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        # The stream heads this store's own commits left (events/stream_heads.py).
        self._known_heads = StreamHeads()

    def append(self, batch: Sequence[NewEvent], conn: Connection | None = None) -> list[Appended]:
        # Digests and hash templates first: none of it needs the lock, so none of it
        # holds up the other writers.
        [outcome] = self.append_prepared([prepare_batch(batch)], conn)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def append_prepared(self, batches: Sequence[Sequence[Prepared]],
                        conn: Connection | None = None) -> list[list[Appended] | EventLogError]:
        """Several prepared batches in one transaction, each all or nothing: per batch,
        its results, or the error that refused it (the others are stored regardless).
        An error of the transaction itself (the database) raises and stores nothing."""
        if conn is not None:  # the caller commits, or not: nothing learnt
            return append_batches(conn, batches)
        try:
            with self.engine.begin() as own:
                outcomes, learnt = append_learning(own, batches, self._known_heads)
        except BaseException:
            self._known_heads.forget()  # the commit may or may not have happened
            raise
        if learnt is not None:
            self._known_heads.committed(*learnt)
        return outcomes

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

    def scan_all(self, after: int = 0, limit: int = 1000,
                 tenant: str | None = None) -> Generator[RecordedEvent, None, None]:
        yield from self._scan(_of_tenant(
            select(events_table).where(events_table.c.position > after)
            .order_by(events_table.c.position).limit(limit), tenant))

    def scan_stream(self, stream_id: str, after_seq: int = 0, limit: int = 1000,
                    tenant: str | None = None) -> Generator[RecordedEvent, None, None]:
        yield from self._scan(_of_tenant(
            select(events_table)
            .where(events_table.c.stream_id == stream_id, events_table.c.stream_seq > after_seq)
            .order_by(events_table.c.stream_seq).limit(limit), tenant))

    def _scan(self, query: Any) -> Generator[RecordedEvent, None, None]:
        # A server-side cursor on PostgreSQL (fetchmany on SQLite): at most SCAN_ROWS rows
        # are in memory at once, however many the query may return.
        with self.engine.connect() as conn:
            for row in conn.execution_options(yield_per=SCAN_ROWS).execute(query):
                yield upcast_event(event_from_row(row._mapping))

    def read_share(self, share: LogShare, after: int, limit: int) -> tuple[list[RecordedEvent], int]:
        if not self._postgres:
            return super().read_share(share, after, limit)
        with self.engine.connect() as conn:
            # The head first, then the share's rows up to it: positions commit in order,
            # so every one up to the head is visible to the second statement.
            horizon = min(last_position(conn, events_table.c.position), after + limit * share.count)
            if horizon <= after:
                return [], after
            query = (select(events_table)
                     .where(events_table.c.position > after, events_table.c.position <= horizon,
                            text(SHARE_SQL).bindparams(**share_parameters(share)))
                     .order_by(events_table.c.position).limit(limit))
            events = [upcast_event(event_from_row(r._mapping)) for r in conn.execute(query)]
        return events, events[-1].position if len(events) == limit else horizon

    def read_wire(self, after: int = 0, limit: int = 1000,
                  conn: Connection | None = None) -> list[WireEvent]:
        """The events after ``after`` as the relay publishes them (raw: as stored), built
        from the rows without decoding the payloads (events/wire_rows.py); on ``conn``
        when given (the relay step's own)."""
        with reading(self.engine, conn) as own:
            if self._postgres and is_psycopg(own):
                return read_wire_postgres(own, after, limit)
            return [wire_event(row) for row in own.execute(wire_query(after, limit))]

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
                 raw: bool = True, conn: Connection | None = None) -> list[RecordedEvent]:
        e = events_table.c
        base = select(events_table).where(e.type.in_(sorted(set(types))))
        # Several queries only when there are more streams than one IN list should carry.
        names = sorted(set(streams)) if streams is not None else None
        queries = ([base] if names is None else [base.where(e.stream_id.in_(names[i:i + ID_CHUNK]))
                                                 for i in range(0, len(names), ID_CHUNK)])
        found: list[RecordedEvent] = []
        with reading(self.engine, conn) as c:
            for query in queries:
                found += [event_from_row(r._mapping) for r in c.execute(query.order_by(e.position))]
        found.sort(key=lambda event: event.position)
        return found if raw else [upcast_event(event) for event in found]

    def scan_types(self, types: Collection[str], conn: Connection | None = None,
                   page: int = 200, after: int = 0) -> Iterator[RecordedEvent]:
        e = events_table.c
        query = (select(events_table).where(e.type.in_(sorted(set(types))))
                 .order_by(e.position).limit(page))
        while True:
            with reading(self.engine, conn) as c:  # no connection of its own held between pages
                rows = [event_from_row(r._mapping) for r in c.execute(query.where(e.position > after))]
            if not rows:
                return
            yield from rows
            after = rows[-1].position

    def at_positions(self, positions: Collection[int], conn: Connection | None = None
                     ) -> dict[int, RecordedEvent]:
        wanted = sorted(set(positions))
        found: dict[int, RecordedEvent] = {}
        with reading(self.engine, conn) as c:
            for i in range(0, len(wanted), ID_CHUNK):
                query = select(events_table).where(events_table.c.position.in_(wanted[i:i + ID_CHUNK]))
                found.update((int(r.position), event_from_row(r._mapping)) for r in c.execute(query))
        return found

    def read_windows(self, reads: dict[str, tuple[int, int]],
                     episode_end: str | Collection[str]) -> dict[str, list[RecordedEvent]]:
        if not reads:
            return {}
        e = events_table.c
        types: BindParameter[list[str]] = bindparam("types", list(end_types(episode_end)),
                                                    expanding=True)
        if self._postgres:
            windows = _PG_WINDOWS.bindparams(types, ids=list(reads),
                                             firsts=[f for f, _ in reads.values()],
                                             lasts=[stop for _, stop in reads.values()])
        else:
            pairs = json.dumps([[stream, first, stop] for stream, (first, stop) in reads.items()])
            windows = _SQLITE_WINDOWS.bindparams(types, pairs=pairs)
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

    def stream_tails(self, prefixes: Sequence[str], after: int, upto: int,
                     limit: int) -> list[Tail]:
        e = events_table.c
        named = or_(*[e.stream_id.startswith(p, autoescape=True) for p in prefixes])
        moved = (select(e.stream_id, func.min(e.position).label("first"))
                 .where(e.position > after, e.position <= upto, named)
                 .group_by(e.stream_id).order_by(func.min(e.position)).limit(limit).subquery("moved"))
        last = (select(e.stream_id, func.max(e.stream_seq).label("seq"))
                .where(e.stream_id.in_(select(moved.c.stream_id)), e.position <= upto)
                .group_by(e.stream_id).subquery("last"))
        query = (select(events_table, moved.c.first)
                 .join(last, and_(e.stream_id == last.c.stream_id, e.stream_seq == last.c.seq))
                 .join(moved, moved.c.stream_id == e.stream_id)
                 .order_by(moved.c.first))
        with self.engine.connect() as conn:
            return [Tail(int(r._mapping["first"]), upcast_event(event_from_row(r._mapping)))
                    for r in conn.execute(query)]

    def closers(self, types: Collection[str], after: int, upto: int, limit: int,
                newest_first: bool = False, tenant: str | None = None,
                conn: Connection | None = None) -> list[Closer]:
        e = events_table.c
        order = e.position.desc() if newest_first else e.position
        query = (select(e.position, e.stream_id, e.stream_seq)
                 .where(e.type.in_(list(types)), e.position > after, e.position <= upto)
                 .order_by(order).limit(limit))
        query = _of_tenant(query, tenant)
        with reading(self.engine, conn) as c:
            return [Closer(int(r[0]), str(r[1]), int(r[2])) for r in c.execute(query)]

    @property
    def _postgres(self) -> bool:
        return is_postgres(self.engine)


def _of_tenant(query: Any, tenant: str | None) -> Any:
    """``query`` limited to one tenant's events; ``None``: every tenant's (operators)."""
    return query if tenant is None else query.where(events_table.c.tenant == tenant)
# A subject never spans an episode end, so a window starts after the last one before
# the first closing event: bounded reads, every stream of a batch in one statement.
_PG_WINDOWS = text(
    "SELECT w.stream_id, COALESCE((SELECT max(e.stream_seq) FROM events e "
    "WHERE e.stream_id = w.stream_id AND e.stream_seq < w.first AND e.type IN :types), 0) AS start, "
    "w.last AS stop FROM unnest(CAST(:ids AS text[]), CAST(:firsts AS bigint[]), "
    "CAST(:lasts AS bigint[])) AS w(stream_id, first, last)"
)
_SQLITE_WINDOWS = text(
    "SELECT w.stream_id, COALESCE((SELECT max(e.stream_seq) FROM events e "
    "WHERE e.stream_id = w.stream_id AND e.stream_seq < w.first AND e.type IN :types), 0) AS start, "
    "w.last AS stop FROM (SELECT json_extract(value, '$[0]') AS stream_id, "
    "json_extract(value, '$[1]') AS first, json_extract(value, '$[2]') AS last "
    "FROM json_each(:pairs)) AS w"
)


