"""``hcp rebuild``: the replayed rows written back, so each table is what the log says.

A missing table (dropped) is created again from the metadata with its indexes, its
guard triggers and, on PostgreSQL, the foreign keys of other tables that the drop took
with it (``DROP … CASCADE``), then filled. A present table gets exactly the rows that
differ rewritten: ghosts deleted, missing rows inserted, differing columns set; its
working columns keep their live values. The table's guard (append-only triggers) is
lifted for that and put back, so a rebuild needs the schema owner's rights, not a
superuser's. Everything runs in the caller's transaction: all of it, or nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table, and_, delete, inspect, select, text, update
from sqlalchemy.engine import Connection
from sqlalchemy.schema import AddConstraint

from events.projections.compare import TableCheck, canonical, within
from events.projections.model import Key, Near, Projection, Row, Subset, Unrecorded
from events.projections.replay import Replayed
from events.projections.sql import bind_row


class CannotRestore(RuntimeError):
    """A row the log only bounds (an old event) is missing and cannot be written exactly."""


@dataclass(frozen=True)
class Rebuilt:
    table: str
    created: bool  # the table was missing and is back
    inserted: int
    updated: int
    deleted: int


def rebuild_in(conn: Connection, projections: Sequence[Projection], replayed: Replayed,
               checks: Mapping[str, TableCheck],
               live: Mapping[str, Mapping[Key, Row] | None]) -> list[Rebuilt]:
    """Make each of ``projections`` (in write order) what ``replayed`` says, given the
    ``checks`` that compared them and the ``live`` rows they compared (None: missing)."""
    done: dict[str, Rebuilt] = {}
    for projection in reversed(projections):  # children first: their ghosts may name ours
        if live[projection.name] is not None:
            deleted = _delete_extra(conn, projection, checks[projection.name])
            done[projection.name] = Rebuilt(projection.name, False, 0, 0, deleted)
    for projection in projections:
        rows = live[projection.name]
        if rows is None:
            done[projection.name] = _create(conn, projection, replayed)
            continue
        inserted, updated = _rewrite(conn, projection, replayed, checks[projection.name], rows)
        done[projection.name] = Rebuilt(projection.name, False, inserted, updated,
                                        done[projection.name].deleted)
    return [done[p.name] for p in projections]


def _delete_extra(conn: Connection, projection: Projection, check: TableCheck) -> int:
    keys = [d.row for d in check.differences if d.kind == "extra"]
    if not keys:
        return 0
    extra = {projection.key_text(k): k for k in _live_keys(conn, projection)}
    with _lifted(conn, projection):
        for text_key in keys:
            conn.execute(delete(projection.table).where(_where(projection, extra[text_key])))
    return len(keys)


def _rewrite(conn: Connection, projection: Projection, replayed: Replayed, check: TableCheck,
             live: Mapping[Key, Row]) -> tuple[int, int]:
    wrong = {d.row for d in check.differences if d.kind in ("missing", "differs")}
    if not wrong:
        return 0, 0
    inserted = updated = 0
    with _lifted(conn, projection):
        for key, row in replayed.rows[projection.name].items():
            text_key = projection.key_text(_canonical(projection, key))
            if text_key not in wrong:
                continue
            current = live.get(_canonical(projection, key))
            if current is None:
                exact = bind_row(projection.table, _exact(projection, row, None))
                conn.execute(projection.table.insert().values(**exact))
                inserted += 1
            else:
                values = {k: v for k, v in _exact(projection, row, current).items()
                          if k not in projection.working and k not in projection.key_columns}
                conn.execute(update(projection.table).where(_where(projection, key))
                             .values(**bind_row(projection.table, values)))
                updated += 1
    return inserted, updated


def _create(conn: Connection, projection: Projection, replayed: Replayed) -> Rebuilt:
    projection.table.create(conn)
    _restore_foreign_keys(conn, projection.table)
    rows = [bind_row(projection.table, _exact(projection, row, None))
            for row in replayed.rows[projection.name].values()]
    if rows:
        conn.execute(projection.table.insert(), rows)
    for statement in projection.guard.create(projection.name, conn.dialect.name):
        conn.execute(text(statement))
    return Rebuilt(projection.name, True, len(rows), 0, 0)


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


def _live_keys(conn: Connection, projection: Projection) -> list[Key]:
    columns = [projection.table.c[c] for c in projection.key_columns]
    return [tuple(canonical(col, value) for col, value in zip(columns, row, strict=True))
            for row in conn.execute(select(*columns))]


def _canonical(projection: Projection, key: Key) -> Key:
    columns = [projection.table.c[c] for c in projection.key_columns]
    return tuple(canonical(col, value) for col, value in zip(columns, key, strict=True))


def _where(projection: Projection, key: Key) -> Any:
    bound = bind_row(projection.table, dict(zip(projection.key_columns, key, strict=True)))
    return and_(*(projection.table.c[name] == value for name, value in bound.items()))

