"""The projectors over the log, in memory: what every projected table should hold.

``replay`` feeds the events (as stored, in position order) through the same projectors
the write path applies, keeping for every row the position of the last event that
changed it, so a finding can say which event a row should come from. An event that
cannot be projected (it does not parse, it updates a row nothing created, it creates one
twice) is a problem of the log itself and is reported as such.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from events.model import RecordedEvent
from events.projections.model import (
    Change,
    Insert,
    InsertMany,
    Key,
    Projection,
    ProjectionError,
    ProjectionSet,
    Row,
    Update,
)
from events.server_events import SERVER_TYPES, Logged, NotAServerEvent, logged


@dataclass(frozen=True)
class Origin:
    """The event a row comes from (the last one that changed it)."""

    position: int
    type: str

    def text(self) -> str:
        return f"{self.type} at position {self.position}"


SEEDED = Origin(0, "the schema's seed")


@dataclass(frozen=True)
class Problem:
    """An event that could not be projected."""

    table: str
    position: int
    message: str


@dataclass
class Replayed:
    """Every replayed table's rows by key, the origin of each, and the problems."""

    rows: dict[str, dict[Key, Row]] = field(default_factory=dict)
    origins: dict[str, dict[Key, Origin]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


class MemoryState:
    """The replay's own tables as a projector reads them (``find`` is indexed by the
    columns asked for, built on first use and kept up to date)."""

    def __init__(self, tables: Iterable[str], sources: Mapping[str, Callable[..., Any]]) -> None:
        self.rows: dict[str, dict[Key, Row]] = {t: {} for t in tables}
        self.sources = sources
        self._indexes: dict[tuple[str, tuple[str, ...]], dict[tuple[Any, ...], list[Key]]] = {}

    def find(self, table: str, **equal: Any) -> list[Row]:
        if table not in self.rows:
            raise LookupError(f"{table} is not being replayed, or not held (a grouped projection's "
                              "rows are read by no projector)")
        columns = tuple(sorted(equal))
        index = self._indexes.get((table, columns))
        if index is None:
            index = self._indexes[(table, columns)] = {}
            for key, row in self.rows[table].items():
                index.setdefault(tuple(row[c] for c in columns), []).append(key)
        wanted = tuple(equal[c] for c in columns)
        return [dict(self.rows[table][k]) for k in index.get(wanted, [])]

    def source(self, name: str) -> Callable[..., Any]:
        try:
            return self.sources[name]
        except KeyError:
            raise LookupError(f"the replay was given no source '{name}'") from None

    def insert(self, table: str, key: Key, row: Row) -> None:
        self.rows[table][key] = row
        for (name, columns), index in self._indexes.items():
            if name == table:
                index.setdefault(tuple(row[c] for c in columns), []).append(key)

    def update(self, table: str, key: Key, values: Mapping[str, Any]) -> None:
        indexed = [(cols, idx) for (name, cols), idx in self._indexes.items()
                   if name == table and set(cols) & set(values)]
        row = self.rows[table][key]
        for columns, index in indexed:
            index[tuple(row[c] for c in columns)].remove(key)
        row.update(values)
        for columns, index in indexed:
            index.setdefault(tuple(row[c] for c in columns), []).append(key)


class Sink(Protocol):
    """Where a replay hands the changes of a table it does not hold (a grouped projection's:
    ``events.projections.grouped``), and the problems of its events."""

    def wants(self, done: Logged[Any]) -> bool:
        """Whether ``done``'s changes are wanted at all (else it is not even projected)."""
        ...

    def add(self, done: Logged[Any], changes: Sequence[Change]) -> None: ...

    def problem(self, found: Problem) -> None: ...


def replay(projections: ProjectionSet, events: Iterable[RecordedEvent],
           sources: Mapping[str, Callable[..., Any]] | None = None,
           tables: Iterable[str] | None = None, sinks: Mapping[str, Sink] | None = None) -> Replayed:
    """The rows of ``tables`` (default: every projection of the set) as the log makes them;
    the changes of a table in ``sinks`` go to its sink instead of being held.

    ``events``: the log's events as stored, in position order; other types are skipped.
    """
    chosen = [p for p in projections if tables is None or p.name in set(tables)]
    sinks = sinks or {}
    held = [p for p in chosen if p.name not in sinks]
    state = MemoryState([p.name for p in held], sources or {})
    out = Replayed(rows=state.rows, origins={p.name: {} for p in held})
    for projection in held:
        for row in projection.seed() if projection.seed else ():
            key = projection.key_of(row)
            state.insert(projection.name, key, dict(row))
            out.origins[projection.name][key] = SEEDED

    def report(problem: Problem) -> None:
        if problem.table in sinks:
            sinks[problem.table].problem(problem)
        else:
            out.problems.append(problem)

    wanted = {cls.TYPE for p in chosen for cls in p.events}
    for recorded in events:
        if recorded.type not in wanted:
            continue
        try:
            done = logged(recorded)
        except NotAServerEvent as exc:
            report(Problem(_first_table(chosen, recorded.type), recorded.position, str(exc)))
            continue
        for projection in chosen:
            sink = sinks.get(projection.name)
            if type(done.event) in projection.events and (sink is None or sink.wants(done)):
                try:
                    changes = projection.project(done, state)
                except ProjectionError as exc:
                    report(Problem(projection.name, done.position, f"{done.type}: {exc}"))
                    continue
                if projection.name in sinks:
                    sinks[projection.name].add(done, changes)
                else:
                    _apply(projection, done.position, done.type, changes, state, out)
    return out


def replay_types(projections: ProjectionSet, tables: Iterable[str] | None = None) -> list[str]:
    """The event types a replay of ``tables`` reads (what to fetch from the log)."""
    chosen = [p for p in projections if tables is None or p.name in set(tables)]
    return sorted({cls.TYPE for p in chosen for cls in p.events if cls.TYPE in SERVER_TYPES})


def _apply(projection: Projection, position: int, event_type: str, changes: Iterable[Change],
           state: MemoryState, out: Replayed) -> None:
    origin = Origin(position, event_type)
    for change in changes:
        if change.table != projection.name:
            out.problems.append(Problem(projection.name, position,
                                        f"its projector wrote {change.table}, not its own table"))
            continue
        rows, origins = state.rows[change.table], out.origins[change.table]
        if isinstance(change, Update):
            key = change.key
            if key not in rows:
                out.problems.append(Problem(change.table, position, (
                    f"{event_type} changes {projection.key_text(key)}, which no earlier event created")))
                continue
            state.update(change.table, key, change.values)
            origins[key] = origin
            continue
        for row in inserted(change):
            key = projection.key_of(row)
            if key in rows:
                out.problems.append(again(projection, event_type, position, key, origins[key]))
                continue
            state.insert(change.table, key, dict(row))
            origins[key] = origin


def inserted(change: Insert | InsertMany) -> list[Row]:
    return [dict(change.row)] if isinstance(change, Insert) else change.rows()


def again(projection: Projection, event_type: str, position: int, key: Key, first: Origin) -> Problem:
    """An event that creates a row an event before it (or itself) created."""
    return Problem(projection.name, position, f"{event_type} creates {projection.key_text(key)} again "
                                              f"(first created by {first.text()})")


def _first_table(chosen: list[Projection], event_type: str) -> str:
    return next((p.name for p in chosen if any(event_type == c.TYPE for c in p.events)), "?")
