"""A replayed table against the live one, row by row (``hcp rebuild --check``, the audit).

Each difference names the table, the row by its key, and the event the row should come
from: a row whose columns differ from its events, a row the log has that the table
lacks, a row no event created (a ghost), or an event that cannot be projected. Working
columns (``Projection.working``) are not compared; values an old event only bounds are
held to their bound and counted, so a report can say how much was only bounded.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Boolean, Column, DateTime, Float, Integer, String, Table, Uuid, inspect, select
from sqlalchemy.engine import Connection

from events.projections.model import Key, Near, Projection, Row, Subset, Unrecorded
from events.projections.replay import Origin, Problem, Replayed
from kernel.clock import utc

Kind = Literal["differs", "missing", "extra", "unprojectable", "table missing"]


@dataclass(frozen=True)
class Difference:
    table: str
    row: str  # the row's key as text: "key_id=3f2a…"; "event 12" for an event's problem
    kind: Kind
    detail: str
    position: int | None  # of the event the row should come from (None: a ghost)
    key: Key | None = field(default=None, compare=False)  # the row's key, canonical (a rebuild's)

    def line(self) -> str:
        return f"{self.table} {self.row}: {self.detail}"

    def to_json(self) -> dict[str, Any]:
        return {"table": self.table, "row": self.row, "kind": self.kind, "detail": self.detail,
                "position": self.position}


class Counter(dict[str, int]):
    """How many values were only held to a bound, by the bound's reason."""

    def add(self, why: str) -> None:
        self[why] = self.get(why, 0) + 1


@dataclass
class TableCheck:
    """One projected table checked: its differences and how many rows and bounds."""

    table: str
    rows: int = 0  # live rows compared
    bounded: Counter = field(default_factory=Counter)
    differences: list[Difference] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.differences


@dataclass(frozen=True)
class Where:
    """A check's scope in one table: the rows whose ``column`` holds one of ``values`` (a
    grouped table scoped by its group reads only those groups)."""

    column: str
    values: frozenset[Any]

    def __call__(self, row: Row) -> bool:
        return row[self.column] in self.values


Scope = Callable[[Row], bool]


def table_exists(conn: Connection, table: Table) -> bool:
    return bool(inspect(conn).has_table(table.name))


def live_rows(conn: Connection, projection: Projection) -> dict[Key, Row]:
    """The live table's rows by key, each value in the comparison's form."""
    return {projection.key_of(row): row for row in scan_live(conn, projection)}


def scan_live(conn: Connection, projection: Projection, where: Any = None) -> Iterator[Row]:
    """The live table's rows (those ``where`` selects) in key order, in the comparison's
    form, read a few thousand at a time."""
    table = projection.table
    query = select(table).order_by(*table.primary_key.columns)
    if where is not None:
        query = query.where(where)
    columns = list(table.columns)
    for record in conn.execute(query.execution_options(yield_per=2000)):
        yield {c.name: canonical(c, value) for c, value in zip(columns, record, strict=True)}


def check_table(projection: Projection, replayed: Replayed, live: Mapping[Key, Row] | Iterable[Row] | None,
                scope: Scope | None = None) -> TableCheck:
    """``projection``'s replayed rows against ``live`` (its rows, or a mapping of them by
    key; None: the table is missing); with ``scope``, only the rows (live or replayed) it
    holds (an audit of one adapter)."""
    name = projection.name
    found = TableCheck(name)
    found.differences += [unprojectable(p) for p in replayed.problems if p.table == name]
    if live is None:
        found.differences.append(missing_table(name))
        return found
    expected = {canonical_key(projection, key): (row, replayed.origins[name][key])
                for key, row in replayed.rows[name].items() if scope is None or scope(row)}
    rows = live.values() if isinstance(live, Mapping) else live
    judge(projection, expected, (r for r in rows if scope is None or scope(r)), found)
    return found


def unprojectable(problem: Problem) -> Difference:
    return Difference(problem.table, f"event {problem.position}", "unprojectable",
                      f"the event at position {problem.position} cannot be projected: {problem.message}",
                      problem.position)


def missing_table(name: str) -> Difference:
    return Difference(name, "(all rows)", "table missing",
                      f"the table is missing; hcp rebuild --table {name} restores it from the log", None)


def judge(projection: Projection, expected: dict[Key, tuple[Row, Origin]], live: Iterable[Row],
          found: TableCheck) -> None:
    """Each live row against its expected one (``expected``: by canonical key, each taken
    as it is judged): differing and ghost rows in live order, then the missing ones in
    the order of the events that create them."""
    name = projection.name
    for row in live:
        found.rows += 1
        key = projection.key_of(row)
        if key not in expected:
            found.differences.append(Difference(name, projection.key_text(key), "extra",
                                                "no event creates this row", None, key))
            continue
        want, origin = expected.pop(key)
        detail = row_differences(projection, row, want, origin, found.bounded)
        if detail:
            found.differences.append(Difference(name, projection.key_text(key), "differs", detail,
                                                origin.position, key))
    for key, (_, origin) in sorted(expected.items(), key=lambda item: item[1][1].position):
        found.differences.append(Difference(name, projection.key_text(key), "missing",
                                            f"the row is missing; {origin.text()} creates it",
                                            origin.position, key))


def row_differences(projection: Projection, live: Row, want: Row, origin: Origin,
                    bounded: Counter | None = None) -> str:
    """What differs between a live row (in ``canonical`` form) and its replayed one, as one
    line ("" when nothing does); bounds met are counted into ``bounded``."""
    bounded = Counter() if bounded is None else bounded
    parts = []
    for column in projection.table.columns:
        name = column.name
        if name in projection.working:
            continue
        expected = want.get(name)
        if isinstance(expected, Near | Unrecorded | Subset):
            bounded.add(expected.why)
            if not within(live[name], expected):
                parts.append(f"{name} is {show(live[name])} in the table, outside what {origin.text()} "
                             f"allows ({_bound_text(expected)})")
            continue
        if live[name] != canonical(column, expected):
            parts.append(f"{name} is {show(live[name])} in the table but {show(canonical(column, expected))} "
                         f"by {origin.text()}")
    return "; ".join(parts)


def within(value: Any, bound: Near | Unrecorded | Subset) -> bool:
    if isinstance(bound, Unrecorded):
        return True
    if isinstance(bound, Near):
        return isinstance(value, datetime) and \
            abs((utc(value) - utc(bound.value)).total_seconds()) <= bound.seconds
    return isinstance(value, dict) and all(value.get(k) == v for k, v in bound.value.items())


def _bound_text(bound: Near | Unrecorded | Subset) -> str:
    if isinstance(bound, Near):
        return f"within {bound.seconds:g} s of {show(bound.value)}: {bound.why}"
    if isinstance(bound, Subset):
        return f"holding {show(dict(bound.value))}: {bound.why}"
    return bound.why


def canonical(column: Column[Any], value: Any) -> Any:
    """A value as stored, in one form per column type (SQLite hands back naive times,
    UUIDs come back as UUIDs): what comparison and keys use."""
    if value is None or isinstance(value, Near | Unrecorded | Subset):
        return value
    kind = column.type
    if isinstance(kind, DateTime) and isinstance(value, datetime):
        return utc(value)
    if isinstance(kind, Uuid):
        return str(value)
    if isinstance(kind, Boolean):
        return bool(value)
    if isinstance(kind, Float):
        return float(value)
    if isinstance(kind, Integer):
        return int(value)
    return value


def canonical_key(projection: Projection, key: Key) -> Key:
    columns = [projection.table.c[name] for name in projection.key_columns]
    return tuple(canonical(c, v) for c, v in zip(columns, key, strict=True))


def canonical_keys(projection: Projection, keys: Iterable[Key]) -> list[Key]:
    """``canonical_key`` of each of ``keys``. A key whose values are of their columns' plain
    types already (a text or an integer: nearly every key) is taken as it is, without the
    dispatch per value: an incremental audit canonicalises every key of every table."""
    columns = [projection.table.c[name] for name in projection.key_columns]
    plain = tuple(str if isinstance(c.type, String) else int if isinstance(c.type, Integer) else None
                  for c in columns)
    out = []
    for key in keys:
        if all(kind is not None and type(v) is kind for kind, v in zip(plain, key, strict=True)):
            out.append(tuple(key))
        else:
            out.append(tuple(canonical(c, v) for c, v in zip(columns, key, strict=True)))
    return out


def show(value: Any) -> str:
    """A value short enough for a one-line finding: long ones by their digest."""
    if isinstance(value, datetime):
        return utc(value).isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    text = repr(value)
    if len(text) <= 80:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return f"<{len(text)} chars, sha256 {digest}…>"


def differences(checks: Iterable[TableCheck]) -> list[Difference]:
    return [d for c in checks for d in c.differences]
