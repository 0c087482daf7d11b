"""What a projector is: a pure function from one typed event (and the rows projected
before it) to the row changes it makes in one table.

A table has exactly one ``Projection``; the events that change it are listed in it. The
write path applies it in the transaction that appends the event (``projections.sql``);
the audit and ``hcp rebuild`` apply the very same function to the log (``replay``), so
a row is by construction what its events say, and a row that is not is found.

Events written before a type recorded everything its row holds can only bound some
values: a time the old writer took from its own clock (``Near``), a value the log does
not hold at all (``Unrecorded``), or only part of a JSON value (``Subset``). Comparison
honours the bound; everything else must be equal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any, Protocol

from sqlalchemy import Table

from events.server_events import Logged, ServerEvent
from kernel.db import append_only_ddl

Row = dict[str, Any]
Key = tuple[Any, ...]


@dataclass(frozen=True)
class Insert:
    table: str
    row: Mapping[str, Any]


@dataclass(frozen=True)
class Update:
    """Set ``values`` on the row with primary key ``key`` (it must exist)."""

    table: str
    key: Key
    values: Mapping[str, Any]


@dataclass(frozen=True)
class InsertMany:
    """Many rows of one table in one change (a manifest's members): the columns once, then
    each row's values in that order. One object instead of one per row, so a projector of
    thousands of rows costs little more than the rows themselves."""

    table: str
    columns: tuple[str, ...]
    values: Sequence[tuple[Any, ...]]

    def rows(self) -> list[Row]:
        return [dict(zip(self.columns, v, strict=True)) for v in self.values]


Change = Insert | InsertMany | Update


class ProjectionError(ValueError):
    """The event cannot be projected (what it names is not there, or not what it says): a
    finding of the log in a replay, an aborted transaction on the write path."""


@dataclass(frozen=True)
class Near:
    """A time the log bounds but does not hold: within ``seconds`` of ``value``."""

    value: datetime
    seconds: float
    why: str


@dataclass(frozen=True)
class Unrecorded:
    """A value the log does not hold (an event written before its type recorded it)."""

    why: str


@dataclass(frozen=True)
class Subset:
    """A JSON object of which the log holds only these keys."""

    value: Mapping[str, Any]
    why: str


Bound = Near | Unrecorded | Subset


class State(Protocol):
    """What a projector may read: the rows projected before this event (the live tables
    on the write path, the replay's own in ``hcp rebuild``), and named read-only sources
    of chained records (e.g. rewards by position) the composition root provides."""

    def find(self, table: str, **equal: Any) -> list[Row]: ...

    def source(self, name: str) -> Callable[..., Any]: ...


Projector = Callable[[Logged[Any], State], Sequence[Change]]


@dataclass(frozen=True)
class Guard:
    """The triggers that keep a table's rows as projected (re-created by a rebuild)."""

    create: Callable[[str, str], list[str]]  # (table, dialect) -> DDL
    names: Callable[[str, str], list[str]]  # (table, dialect) -> trigger names


def _append_only_names(table: str, dialect: str) -> list[str]:
    if dialect == "postgresql":
        return [f"{table}_no_update_delete", f"{table}_no_truncate"]
    return [f"{table}_no_update", f"{table}_no_delete"]


APPEND_ONLY = Guard(append_only_ddl, _append_only_names)
NO_GUARD = Guard(lambda table, dialect: [], lambda table, dialect: [])


@dataclass(frozen=True)
class Projection:
    """The one projector of ``table`` and what it needs to be replayed and checked.

    ``working``: columns that are not history (a lease's expiry, a last-use stamp), by
    column, with why; the projector gives their first value, the check skips them and a
    rebuild keeps the live ones. ``seed``: rows the schema itself created before the log
    began (a migration's defaults), projected before the first event.

    ``group``: a key column such that the rows with one value of it all come from one
    event (a manifest's members: ``manifest_id``). Such a table is only ever
    inserted into and no projector reads it, so a check compares it one event's rows at a
    time and never holds it whole (``events.projections.grouped``): what a table whose
    size grows with the log, not with the things it describes, needs.
    """

    table: Table
    events: tuple[type[ServerEvent], ...]
    project: Projector
    guard: Guard = APPEND_ONLY
    working: Mapping[str, str] = field(default_factory=dict)
    seed: Callable[[], Sequence[Row]] | None = None
    group: str | None = None
    # The group an event's rows fall in, read from the event alone (a manifest's id): a
    # check of some groups only (one adapter's audit) then projects only their events.
    event_group: Callable[[Logged[Any]], Any] | None = None

    @property
    def name(self) -> str:
        return self.table.name

    @cached_property
    def key_columns(self) -> tuple[str, ...]:  # asked for every row a replay makes: kept
        return tuple(c.name for c in self.table.primary_key.columns)

    def key_of(self, row: Mapping[str, Any]) -> Key:
        return tuple(row[c] for c in self.key_columns)

    def key_text(self, key: Key) -> str:
        """A row's key as a finding names it: ``key_id=3f2a…`` (several: comma-separated)."""
        return ", ".join(f"{c}={v}" for c, v in zip(self.key_columns, key, strict=True))


class ProjectionSet:
    """A package's projections, in the order their rows may be written (parents before
    the rows whose foreign keys name them), and the event types of the package that
    change no table (``unprojected``)."""

    def __init__(self, *projections: Projection, unprojected: Iterable[type[ServerEvent]] = ()) -> None:
        self.projections = tuple(projections)
        self.unprojected = frozenset(unprojected)
        self._by_type: dict[type[ServerEvent], list[Projection]] = {}
        for projection in self.projections:
            for cls in projection.events:
                self._by_type.setdefault(cls, []).append(projection)

    def for_event(self, cls: type[ServerEvent]) -> list[Projection]:
        """The projections ``cls`` changes, in write order.

        Raises:
            LookupError: ``cls`` is neither projected here nor declared unprojected (a
                writer using another package's set, or a type nobody projects).
        """
        found = self._by_type.get(cls)
        if found is None and cls not in self.unprojected:
            raise LookupError(f"{cls.TYPE} is not projected by this set "
                              f"({', '.join(p.name for p in self.projections)})")
        return found or []

    def table(self, name: str) -> Table:
        for projection in self.projections:
            if projection.name == name:
                return projection.table
        raise LookupError(f"no projection of table {name}")

    @property
    def event_types(self) -> frozenset[type[ServerEvent]]:
        return frozenset(self._by_type) | self.unprojected

    def __iter__(self) -> Any:
        return iter(self.projections)

    def __add__(self, other: ProjectionSet) -> ProjectionSet:
        return ProjectionSet(*self.projections, *other.projections,
                             unprojected=self.unprojected | other.unprojected)
