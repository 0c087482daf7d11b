"""The write path of a projection: append the event, apply its projectors, one transaction.

Writers of server events call ``write_in`` instead of inserting rows themselves: the row
is then by construction what the event says (the audit replays the same projector), and
a writer cannot forget a table (its package's ``ProjectionSet`` refuses an event type it
does not know).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import JSON, Select, Table, Uuid, and_, bindparam, select, update
from sqlalchemy.engine import Connection

from events.model import EventMetadata
from events.projections.model import Bound, Change, Insert, Projection, ProjectionSet, Row, Update
from events.server_events import E, Logged, as_logged
from events.store import EventStore

Sources = Mapping[str, Callable[..., Any]]


class ProjectionFailed(RuntimeError):
    """A projector asked for a change the tables cannot take (an update of a missing row):
    the writer's transaction must not commit."""


def write_in(conn: Connection, store: EventStore, projections: ProjectionSet, stream_id: str,
             event: E, metadata: EventMetadata, sources: Sources | None = None,
             expected_seq: int | None = None) -> Logged[E]:
    """Append ``event`` on ``stream_id`` inside ``conn``'s transaction and apply every
    projection of its type; the event as stored."""
    done = append_in(conn, store, projections, stream_id, event, metadata, expected_seq)
    project_in(conn, projections, done, sources)
    return done


def append_in(conn: Connection, store: EventStore, projections: ProjectionSet, stream_id: str,
              event: E, metadata: EventMetadata, expected_seq: int | None = None) -> Logged[E]:
    """Append ``event`` without projecting it yet: ``project_in`` must follow in the same
    transaction (once the rows its projection's foreign keys name are written)."""
    projections.for_event(type(event))  # refuse an unknown type before writing anything
    [appended] = store.append([event.new_event(stream_id, metadata, expected_seq)], conn=conn)
    return as_logged(event, appended.event)


def project_in(conn: Connection, projections: ProjectionSet, done: Logged[Any],
               sources: Sources | None = None) -> None:
    """Apply the projections of ``done``'s type inside ``conn``'s transaction."""
    state = SqlState(conn, projections.table, sources or {})
    for projection in projections.for_event(type(done.event)):
        apply_in(conn, projection.project(done, state), projections.table)


class SqlState:
    """The live tables as a projector reads them, inside the writer's transaction."""

    def __init__(self, conn: Connection, tables: Callable[[str], Table], sources: Sources) -> None:
        self.conn, self.tables, self.sources = conn, tables, sources

    def find(self, table: str, **equal: Any) -> list[Row]:
        t = self.tables(table)
        if any(value is None for value in equal.values()):  # IS NULL: no parameter to bind
            query = select(t).where(and_(*(t.c[name] == value for name, value in equal.items())))
            return [dict(r._mapping) for r in self.conn.execute(query)]
        return [dict(r) for r in self.conn.execute(_finding(t, tuple(sorted(equal))), equal).mappings()]

    def source(self, name: str) -> Callable[..., Any]:
        try:
            return self.sources[name]
        except KeyError:
            raise LookupError(f"the writer gave no source '{name}'") from None


@lru_cache(maxsize=64)
def _finding(table: Table, columns: tuple[str, ...]) -> Select[Any]:
    """The statement of a ``find`` by ``columns``, built once: a projector's read is on the
    write path, and building the statement cost as much as running it."""
    return select(table).where(and_(*(table.c[name] == bindparam(name) for name in columns)))


def apply_in(conn: Connection, changes: Sequence[Change], tables: Callable[[str], Table]) -> None:
    """Write ``changes`` in order; consecutive inserts into one table in one statement."""
    pending: list[Row] = []
    into: Table | None = None
    for change in changes:
        table = tables(change.table)
        if not isinstance(change, Update):
            if table is not into:
                _flush(conn, into, pending)
                pending, into = [], table
            rows = [change.row] if isinstance(change, Insert) else change.rows()
            pending += [bind_row(table, row) for row in rows]
            continue
        _flush(conn, into, pending)
        pending, into = [], None
        key = dict(zip((c.name for c in table.primary_key.columns), change.key, strict=True))
        where = and_(*(table.c[name] == value for name, value in bind_row(table, key).items()))
        done = conn.execute(update(table).where(where).values(**bind_row(table, change.values)))
        if done.rowcount != 1:
            raise ProjectionFailed(f"{table.name}: no row {key} to update")
    _flush(conn, into, pending)


def _flush(conn: Connection, table: Table | None, rows: list[Row]) -> None:
    if table is not None and rows:
        conn.execute(table.insert(), rows)


def bind_row(table: Table, row: Mapping[str, Any]) -> Row:
    """A projected row as the database takes it: UUID columns as UUIDs, a JSON column's
    None as JSON null (never SQL NULL in a NOT NULL column). Bounds are refused: only a
    replay of old events yields them, and it never writes them."""
    bound: Row = {}
    for name, value in row.items():
        column = table.c[name]
        if isinstance(value, Bound):
            raise ProjectionFailed(f"{table.name}.{name}: {value.why}")
        if value is not None and isinstance(column.type, Uuid) and not isinstance(value, uuid.UUID):
            value = uuid.UUID(str(value))
        elif value is None and isinstance(column.type, JSON) and not column.nullable:
            value = JSON.NULL
        bound[name] = value
    return bound


def set_working_in(conn: Connection, projection: Projection, where: Any, **values: Any) -> int:
    """Set working columns (``Projection.working``: progress, not history) of the rows
    ``where`` selects; how many. The one way a projected table is written besides its
    projector, and it refuses any other column."""
    history = sorted(set(values) - set(projection.working))
    if history:
        raise ValueError(f"{projection.name}: {', '.join(history)} come from the log, not from "
                         "set_working_in")
    return int(conn.execute(update(projection.table).where(where).values(**values)).rowcount)
