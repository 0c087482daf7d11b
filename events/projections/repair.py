"""``hcp rebuild``: the replayed rows written back, so each table is what the log says.

A missing table (dropped) is created again from the metadata with its indexes and
filled, then given back its guard triggers and, on PostgreSQL, the foreign keys of other
tables that the drop took with it (``DROP … CASCADE``; put back once every table is
filled, so the rows they name are there). A present table gets exactly the rows that
differ rewritten: ghosts deleted, missing rows inserted, differing columns set; its
working columns keep their live values. The table's guard (append-only triggers) is
lifted for that and put back, so a rebuild needs the schema owner's rights, not a
superuser's. A held projection's rows come from the check's replay; a grouped one's
(``Projection.group``) from a second replay of its events, written as they come, so a
rebuild holds no more of such a table than its check did. Everything runs in the
caller's transaction: all of it, or nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table, and_, delete, inspect, text, update
from sqlalchemy.engine import Connection
from sqlalchemy.schema import AddConstraint

from events.projections.compare import TableCheck, canonical_key, scan_live, within
from events.projections.model import (
    Change,
    Insert,
    InsertMany,
    Key,
    Near,
    Projection,
    Row,
    Subset,
    Unrecorded,
)
from events.projections.replay import Problem, Replayed, Sink, inserted
from events.projections.sql import bind_row
from events.server_events import Logged


class CannotRestore(RuntimeError):
    """A row the log only bounds (an old event) is missing and cannot be written exactly."""


@dataclass(frozen=True)
class Rebuilt:
    table: str
    created: bool  # the table was missing and is back
    inserted: int
    updated: int
    deleted: int


# Runs a replay of the given tables' events, handing each table's changes to its sink.
ReplayInto = Callable[[Mapping[str, Sink]], object]


def rebuild_in(conn: Connection, projections: Sequence[Projection], checks: Mapping[str, TableCheck],
               replayed: Replayed, present: Mapping[str, bool], replay_into: ReplayInto) -> list[Rebuilt]:
    """Make each of ``projections`` (in write order) what the log says, given the ``checks``
    that compared them, the rows ``replayed`` of the held ones, which tables were
    ``present``, and ``replay_into`` for the grouped ones (replayed again, their rows
    written as they come: they are never held)."""
    deleted = {p.name: _delete_extra(conn, p, checks[p.name])
               for p in reversed(projections) if present[p.name]}  # children first: ghosts may name ours
    for projection in projections:
        if not present[projection.name]:
            projection.table.create(conn)
    done: dict[str, tuple[int, int]] = {}
    for run in _runs(projections):
        if run[0].group is None:
            done[run[0].name] = _write_held(conn, run[0], replayed, checks[run[0].name], present[run[0].name])
        else:
            done.update(_write_grouped(conn, run, checks, present, replay_into))
    for projection in projections:
        if not present[projection.name]:
            _restore_foreign_keys(conn, projection.table)
            for statement in projection.guard.create(projection.name, conn.dialect.name):
                conn.execute(text(statement))
    return [Rebuilt(p.name, not present[p.name], *done[p.name], deleted.get(p.name, 0)) for p in projections]


def _runs(projections: Sequence[Projection]) -> list[list[Projection]]:
    """Held projections one by one; consecutive grouped ones together (one replay writes
    each event's rows of all of them, parents first)."""
    runs: list[list[Projection]] = []
    for projection in projections:
        if projection.group is not None and runs and runs[-1][0].group is not None:
            runs[-1].append(projection)
        else:
            runs.append([projection])
    return runs


def _delete_extra(conn: Connection, projection: Projection, check: TableCheck) -> int:
    keys = [d.key for d in check.differences if d.kind == "extra" and d.key is not None]
    if keys:
        with _lifted(conn, projection):
            for key in keys:
                conn.execute(delete(projection.table).where(_where(projection, key)))
    return len(keys)


class _Writer:
    """One table's rows written back: those a check found missing or differing, or every
    row (a table created again)."""

    def __init__(self, conn: Connection, projection: Projection, check: TableCheck, everything: bool) -> None:
        self.conn, self.projection, self.everything = conn, projection, everything
        self.wrong = {d.key: d.kind for d in check.differences if d.kind in ("missing", "differs")}
        self.inserted = self.updated = 0

    @property
    def idle(self) -> bool:
        return not self.everything and not self.wrong

    def write(self, rows: Iterable[tuple[Key, Row]]) -> None:
        table, fresh = self.projection.table, []
        for key, row in rows:
            key = canonical_key(self.projection, key)
            if self.everything:
                fresh.append(bind_row(table, _exact(self.projection, row, None)))
            elif key in self.wrong:
                self._rewrite(key, row)
        if fresh:
            self.conn.execute(table.insert(), fresh)
            self.inserted += len(fresh)

    def _rewrite(self, key: Key, row: Row) -> None:
        table = self.projection.table
        if self.wrong[key] == "missing":
            self.conn.execute(table.insert().values(**bind_row(table, _exact(self.projection, row, None))))
            self.inserted += 1
            return
        [current] = scan_live(self.conn, self.projection, _where(self.projection, key))
        values = {k: v for k, v in _exact(self.projection, row, current).items()
                  if k not in self.projection.working and k not in self.projection.key_columns}
        self.conn.execute(update(table).where(_where(self.projection, key)).values(**bind_row(table, values)))
        self.updated += 1


def _write_held(conn: Connection, projection: Projection, replayed: Replayed, check: TableCheck,
                present: bool) -> tuple[int, int]:
    writer = _Writer(conn, projection, check, everything=not present)
    if not writer.idle:
        with _lifted(conn, projection) if present else nullcontext():  # a new table has no guard yet
            writer.write(replayed.rows[projection.name].items())
    return writer.inserted, writer.updated


class _GroupSink:
    """A grouped table's rows, handed over by a replay event by event, to its writer."""

    def __init__(self, writer: _Writer) -> None:
        self.writer = writer

    def wants(self, done: Logged[Any]) -> bool:
        return True

    def add(self, done: Logged[Any], changes: Sequence[Change]) -> None:
        projection = self.writer.projection
        self.writer.write((projection.key_of(row), row) for change in changes
                          if isinstance(change, Insert | InsertMany) and change.table == projection.name
                          for row in inserted(change))

    def problem(self, found: Problem) -> None:
        pass  # the check before found them all, and a rebuild stops at one


def _write_grouped(conn: Connection, run: list[Projection], checks: Mapping[str, TableCheck],
                   present: Mapping[str, bool], replay_into: ReplayInto) -> dict[str, tuple[int, int]]:
    writers = {p.name: _Writer(conn, p, checks[p.name], everything=not present[p.name]) for p in run}
    busy = {name: _GroupSink(w) for name, w in writers.items() if not w.idle}
    if busy:
        with ExitStack() as lifted:
            for name, sink in busy.items():
                if present[name]:  # a new table has no guard yet
                    lifted.enter_context(_lifted(conn, sink.writer.projection))
            replay_into(busy)
    return {name: (w.inserted, w.updated) for name, w in writers.items()}


def _exact(projection: Projection, row: Row, current: Row | None) -> Row:
    """``row`` with each bound replaced by a value: the live one when it is within the
    bound, else the bound's own (a time), else refused."""
    out: Row = {}
    for name, value in row.items():
        if isinstance(value, Near | Unrecorded | Subset):
            value = _resolve(projection, name, value, current)
        out[name] = value
    return out


def _resolve(projection: Projection, name: str, bound: Near | Unrecorded | Subset,
             current: Row | None) -> Any:
    if current is not None and within(current[name], bound):
        return current[name]
    if isinstance(bound, Near):
        return bound.value
    raise CannotRestore(f"{projection.name}.{name}: the log does not hold it ({bound.why})")


class _lifted:
    """The table's guard triggers dropped for the block and created again after it."""

    def __init__(self, conn: Connection, projection: Projection) -> None:
        self.conn, self.projection = conn, projection

    def __enter__(self) -> None:
        dialect, name = self.conn.dialect.name, self.projection.name
        for trigger in self.projection.guard.names(name, dialect):
            on = f" ON {name}" if dialect == "postgresql" else ""
            self.conn.execute(text(f"DROP TRIGGER IF EXISTS {trigger}{on}"))

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            for statement in self.projection.guard.create(self.projection.name, self.conn.dialect.name):
                self.conn.execute(text(statement))


def _restore_foreign_keys(conn: Connection, table: Table) -> None:
    """PostgreSQL drops the foreign keys that name a table dropped with CASCADE: add back
    those of the metadata that the database lacks (SQLite keeps them in the other
    tables' own definitions)."""
    if conn.dialect.name != "postgresql":
        return
    inspector = inspect(conn)
    for other in table.metadata.tables.values():
        if other is table or not inspector.has_table(other.name):
            continue
        present = {(fk["referred_table"], tuple(fk["constrained_columns"]))
                   for fk in inspector.get_foreign_keys(other.name)}
        for constraint in other.foreign_key_constraints:
            if constraint.referred_table is table and \
                    (table.name, tuple(constraint.column_keys)) not in present:
                conn.execute(AddConstraint(constraint))


def _where(projection: Projection, key: Key) -> Any:
    """The row of ``key`` (canonical: UUIDs as text, bound back to the column's type)."""
    bound = bind_row(projection.table, dict(zip(projection.key_columns, key, strict=True)))
    return and_(*(projection.table.c[name] == value for name, value in bound.items()))

