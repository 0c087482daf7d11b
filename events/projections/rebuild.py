"""``hcp rebuild`` and ``hcp rebuild --check`` over every projection the server has.

A check reads the log's server events and the live tables in one snapshot and replays
the events in one pass, a page at a time. The held projections (the registry's, the
keys', the runs': a row per thing the server knows) are replayed into memory, as their
projectors read the rows before; each is then compared with its live table read in key
order (``compare``). A grouped projection (``Projection.group``: a manifest's members,
whose size grows with the log) is compared one event's rows at a time as the replay
reaches the event, and never held (``grouped``). A rebuild does the same inside one
write transaction that holds the writers' locks (the composition root names them, in
the order the writers take them), so no event commits between the replay and the rows
written back (``repair``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from sqlalchemy.engine import Connection, Engine

from events.projections.catchup import CaughtUp, catch_up
from events.projections.compare import (
    Scope,
    TableCheck,
    Where,
    check_table,
    missing_table,
    scan_live,
    table_exists,
    unprojectable,
)
from events.projections.digest import Background, digestible
from events.projections.grouped import GroupedCheck, LiveDigests, ProblemsOnly
from events.projections.model import Change, Projection, ProjectionError, ProjectionSet
from events.projections.repair import Rebuilt, rebuild_in
from events.projections.replay import MemoryState, Replayed, Sink, replay, replay_types
from events.projections.window import Covered, Window, judge_held, project_grouped
from events.server_events import Logged, logged
from events.store import EventStore
from kernel.db import is_postgres
from kernel.sql import lock_writers

SourceFactory = Callable[[Connection], Mapping[str, Callable[..., object]]]


@dataclass(frozen=True)
class RebuildReport:
    checks: list[TableCheck]
    rebuilt: list[Rebuilt]  # empty for a check

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)


@dataclass(frozen=True)
class WindowReport(RebuildReport):
    covered: dict[str, Covered]  # by table: what the window's check compared


@dataclass(frozen=True)
class _Checked:
    checks: list[TableCheck]
    replayed: Replayed  # the held projections' rows
    present: dict[str, bool]  # by table: whether it exists


class UnknownTable(LookupError):
    pass


class Rebuilder:
    def __init__(self, engine: Engine, store: EventStore, projections: ProjectionSet,
                 sources: SourceFactory | None = None, locks: Sequence[int] = ()) -> None:
        """``sources``: the named read-only sources some projectors need, on a connection;
        ``locks``: the writers' advisory lock keys, in the order writers take them."""
        self.engine, self.store, self.projections = engine, store, projections
        self.sources = sources or (lambda conn: {})
        self.locks = tuple(locks)

    def tables(self) -> list[str]:
        return [p.name for p in self.projections]

    def check(self, tables: Iterable[str] | None = None,
              on_table: Callable[[TableCheck], None] | None = None,
              scope: Mapping[str, Scope] | None = None) -> RebuildReport:
        """Every chosen projection replayed and compared with its live table (``scope``: by
        table, which rows to compare; the others are replayed but not judged)."""
        chosen = self._chosen(tables)
        with self._snapshot() as conn:
            checks = self._check(conn, chosen, scope or {}).checks
        for found in checks:
            if on_table is not None:
                on_table(found)
        return RebuildReport(checks, [])

    def check_window(self, window: Window, tables: Iterable[str] | None = None,
                     on_table: Callable[[TableCheck], None] | None = None) -> WindowReport:
        """The rows the events after ``window.after`` wrote, and a seeded sample of the
        older ones, compared in one snapshot (``events.projections.window``)."""
        chosen = self._chosen(tables)
        covered: dict[str, Covered] = {}
        with self._snapshot() as conn:
            present = {p.name: table_exists(conn, p.table) for p in chosen}
            held = [p for p in chosen if p.group is None]
            # Their events are small: pages of 2,000 (the grouped tables' are not)
            replayed = self._replay(conn, [p.name for p in held], {}, page=2000) if held else Replayed()
            checks = []
            for p in held:
                found, covered[p.name] = judge_held(p, replayed, conn if present[p.name] else None, window)
                if not present[p.name]:
                    found.differences.append(missing_table(p.name))
                checks.append(found)
            grouped = [p for p in chosen if p.group is not None]
            if grouped:
                checks += self._grouped_window(conn, grouped, present, window, covered)
        for found in checks:
            if on_table is not None:
                on_table(found)
        return WindowReport(checks, [], covered)

    def _grouped_window(self, conn: Connection, grouped: list[Projection], present: dict[str, bool],
                        window: Window, covered: dict[str, Covered]) -> list[TableCheck]:
        """The grouped tables' groups made by the window's events: those after its position
        and a sample of the older ones (one draw for the tables the same events make)."""
        types = replay_types(self.projections, [p.name for p in grouped])
        new = list(self.store.scan_types(types, conn=conn, after=window.after))
        found = self.store.closers(types, 0, window.after, max(window.after, 1), conn=conn)
        older = [c.position for c in found]
        sampled = window.pick("+".join(p.name for p in grouped), older, window.groups)
        events = sorted([*self.store.at_positions(sampled, conn).values(), *new], key=lambda e: e.position)
        projected = project_grouped(grouped, events, self.sources(conn))
        live = [p for p in grouped if present[p.name]]
        scope = {p.name: Where(str(p.group), frozenset(projected.groups[p.name])) for p in live}
        digests = self._digests(conn, live, scope)
        sinks = {p.name: GroupedCheck(conn, p, scope[p.name], digests.get(p.name)) for p in live}
        for projection, done, changes in projected.made:
            if projection.name in sinks:
                sinks[projection.name].add(done, changes)
        checks = []
        for p in grouped:
            problems = [x for x in projected.problems if x.table == p.name]
            covered[p.name] = Covered(len(new), len(sampled), len(older), [f"event {x}" for x in sampled],
                                      list(sampled))
            if p.name not in sinks:
                checks.append(TableCheck(p.name, differences=[*map(unprojectable, problems),
                                                              missing_table(p.name)]))
                continue
            for problem in problems:
                sinks[p.name].problem(problem)
            checks.append(sinks[p.name].finish(partial(self._reproject, conn, p)))
        return checks

    def catch_up(self, table: str, page: int = 500,
                 on_page: Callable[[CaughtUp], None] | None = None) -> CaughtUp:
        """One projection brought to the log's head from its stored position, a page of its
        own events per transaction (``events.projections.catchup``).

        Raises:
            UnknownTable: ``table`` is not a projection.
            CatchUpError: an event of its types cannot be projected.
        """
        [projection] = self._chosen([table])
        return catch_up(self.engine, self.store, projection, self.projections.table,
                        replay_types(self.projections, [table]), self.sources, self.locks, page, on_page)

    def rebuild(self, tables: Iterable[str] | None = None) -> RebuildReport:
        """The chosen tables made what the log says (missing ones created), atomically."""
        chosen = self._chosen(tables)
        with self.engine.begin() as conn:
            for key in self.locks:
                lock_writers(conn, key)
            checked = self._check(conn, chosen, {})
            if any(d.kind == "unprojectable" for c in checked.checks for d in c.differences):
                return RebuildReport(checked.checks, [])  # the log itself is at fault: write nothing
            rebuilt = rebuild_in(conn, chosen, {c.table: c for c in checked.checks}, checked.replayed,
                                 checked.present, lambda sinks: self._replay(conn, list(sinks), sinks))
        return RebuildReport(checked.checks, rebuilt)

    def _check(self, conn: Connection, chosen: list[Projection], scope: Mapping[str, Scope]) -> _Checked:
        present = {p.name: table_exists(conn, p.table) for p in chosen}
        digests = self._digests(conn, [p for p in chosen if p.group is not None and present[p.name]], scope)
        sinks: dict[str, GroupedCheck | ProblemsOnly] = {
            p.name: GroupedCheck(conn, p, scope.get(p.name), digests.get(p.name)) if present[p.name]
            else ProblemsOnly() for p in chosen if p.group is not None}
        replayed = self._replay(conn, [p.name for p in chosen], sinks)
        checks = []
        for p in chosen:
            sink = sinks.get(p.name)
            if isinstance(sink, GroupedCheck):
                checks.append(sink.finish(partial(self._reproject, conn, p)))
            elif isinstance(sink, ProblemsOnly):
                checks.append(TableCheck(p.name, differences=[*sink.differences(), missing_table(p.name)]))
            else:
                live = scan_live(conn, p) if present[p.name] else None
                checks.append(check_table(p, replayed, live, scope.get(p.name)))
        return _Checked(checks, replayed, present)

    def _replay(self, conn: Connection, tables: list[str], sinks: Mapping[str, Sink],
                page: int = 200) -> Replayed:
        events = self.store.scan_types(replay_types(self.projections, tables), conn=conn, page=page)
        return replay(self.projections, events, self.sources(conn), tables, sinks)

    def _digests(self, conn: Connection, grouped: list[Projection],
                 scope: Mapping[str, Scope]) -> dict[str, LiveDigests]:
        """The database's digests of the grouped tables that have them (PostgreSQL), on
        their way while the replay runs."""
        wanted: dict[str, tuple[Projection, frozenset[Any] | None]] = {}
        for p in grouped:
            where = scope.get(p.name)
            by_group = isinstance(where, Where) and where.column == p.group
            if (where is None or by_group) and digestible(conn, p):  # (another scope: read row by row)
                wanted[p.name] = (p, where.values if isinstance(where, Where) else None)
        if not wanted:
            return {}
        background = Background(self.engine, conn, wanted)
        return {name: background.of(name) for name in wanted}

    def _reproject(self, conn: Connection, projection: Projection,
                   event_ids: Sequence[str]) -> list[tuple[Logged[Any], Sequence[Change]]]:
        """A grouped projection's events made again (``GroupedCheck.finish``), in log order."""
        state = MemoryState([], self.sources(conn))
        found = self.store.get_many(event_ids, conn, raw=True)
        made: list[tuple[Logged[Any], Sequence[Change]]] = []
        for recorded in sorted(found.values(), key=lambda e: e.position):
            done = logged(recorded)
            try:
                made.append((done, projection.project(done, state)))
            except ProjectionError:
                continue  # reported by the replay already
        return made

    def _chosen(self, tables: Iterable[str] | None) -> list[Projection]:
        if tables is None:
            return list(self.projections)
        wanted = list(tables)
        unknown = sorted(set(wanted) - set(self.tables()))
        if unknown:
            raise UnknownTable(f"not a projected table: {', '.join(unknown)} "
                               f"(projected: {', '.join(self.tables())})")
        return [p for p in self.projections if p.name in wanted]

    def _snapshot(self) -> _Snapshot:
        return _Snapshot(self.engine)


class _Snapshot:
    """A read-only transaction that sees one state of the database throughout: REPEATABLE
    READ on PostgreSQL; on SQLite every transaction is one already (BEGIN IMMEDIATE)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def __enter__(self) -> Connection:
        options = {"isolation_level": "REPEATABLE READ"} if is_postgres(self.engine) else {}
        self.conn = self.engine.connect().execution_options(**options)
        self.conn.begin()
        return self.conn

    def __exit__(self, *exc: object) -> None:
        self.conn.rollback()
        self.conn.close()
