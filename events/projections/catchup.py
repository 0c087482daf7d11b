"""A projection added to a server that already has a log, caught up from a stored position
(``hcp rebuild --table T --catch-up``), as a catch-up subscription does (KurrentDB, Marten's
async daemon), without replaying what the other projections already hold.

Only the table's own event types are read, a page at a time from the position stored for
it (``checkpoints`` row ``projection:<table>``, 0 for a new one), and projected through the
write path's own statements against the table as it stands. Each page commits with its
position, under the writers' locks (so no write interleaves with a page, and a page's
rows and its position are one transaction: stopped anywhere, the next run goes on from
the last page, exactly once). The projector is already live on the write path when the
new code runs, so events appended since are projected there too: a row the catch-up
would insert that is already there is left as it is, and updates are applied in log
order, so once the catch-up reaches the head the table is what a replay of the whole log
makes (``hcp rebuild --check --table T`` says so).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

from sqlalchemy import Table, tuple_
from sqlalchemy.engine import Connection, Engine

from events.checkpoints import load, save
from events.projections.model import Change, Insert, InsertMany, Projection, ProjectionError, Row
from events.projections.sql import ProjectionFailed, SqlState, apply_in, bind_row
from events.server_events import NotAServerEvent, logged
from events.store import EventStore
from kernel.sql import lock_writers

PREFIX = "projection:"


class CatchUpError(RuntimeError):
    """The log holds an event of the table's types that cannot be projected: nothing of its
    page was written (``hcp rebuild --check --table T`` names it)."""


@dataclass
class CaughtUp:
    table: str
    started_at: int  # the stored position it went on from
    position: int  # where it is now
    events: int = 0  # events projected
    pages: int = 0
    inserted: int = 0  # rows written
    present: int = 0  # rows the write path had written already
    updated: int = 0
    seconds: float = 0.0


def position_name(table: str) -> str:
    return PREFIX + table


def catch_up(engine: Engine, store: EventStore, projection: Projection, tables: Callable[[str], Table],
             types: Sequence[str], sources: Callable[[Connection], Mapping[str, Callable[..., Any]]],
             locks: Sequence[int], page: int = 500,
             on_page: Callable[[CaughtUp], None] | None = None) -> CaughtUp:
    """Project the events of ``types`` after the table's stored position, a page per
    transaction, until none is left."""
    started = time.perf_counter()
    with engine.connect() as conn:
        done = CaughtUp(projection.name, load(conn, position_name(projection.name)), 0)
    done.position = done.started_at
    while True:
        with engine.begin() as conn:
            for key in locks:
                lock_writers(conn, key)
            after = load(conn, position_name(projection.name))
            events = list(islice(store.scan_types(types, conn, page, after), page))
            for recorded in events:
                _project(conn, projection, tables, recorded, sources(conn), done)
            if events:
                done.position = events[-1].position
                save(conn, position_name(projection.name), done.position)
        done.events, done.pages = done.events + len(events), done.pages + bool(events)
        done.seconds = time.perf_counter() - started
        if on_page is not None and events:
            on_page(done)
        if len(events) < page:
            return done


def _project(conn: Connection, projection: Projection, tables: Callable[[str], Table], recorded: Any,
             sources: Mapping[str, Callable[..., Any]], done: CaughtUp) -> None:
    try:
        event = logged(recorded)
        changes = projection.project(event, SqlState(conn, tables, sources))
    except (NotAServerEvent, ProjectionError) as exc:
        raise CatchUpError(f"{projection.name}: the event at position {recorded.position} cannot be "
                           f"projected: {exc}") from None
    fresh: list[Change] = []
    for change in changes:
        if isinstance(change, Insert | InsertMany):
            rows = [dict(change.row)] if isinstance(change, Insert) else change.rows()
            new = _absent(conn, tables(change.table), rows)
            done.present += len(rows) - len(new)
            done.inserted += len(new)
            fresh += [Insert(change.table, row) for row in new]
        else:
            done.updated += 1
            fresh.append(change)
    try:
        apply_in(conn, fresh, tables)
    except ProjectionFailed as exc:  # an update of a row no event before it created
        raise CatchUpError(f"{projection.name}: the event at position {recorded.position} cannot be "
                           f"projected: {exc}") from None


def _absent(conn: Connection, table: Table, rows: list[Row]) -> list[Row]:
    """The rows whose primary key the table does not hold yet."""
    columns = list(table.primary_key.columns)
    keys = [tuple(bind_row(table, {c.name: row[c.name] for c in columns}).values()) for row in rows]
    there: set[tuple[Any, ...]] = set()
    for i in range(0, len(keys), 500):
        chunk = keys[i:i + 500]
        query = table.select().with_only_columns(*columns).where(tuple_(*columns).in_(chunk))
        there |= {tuple(r) for r in conn.execute(query)}
    return [row for row, key in zip(rows, keys, strict=True) if key not in there]
