"""``hcp rebuild`` and ``hcp rebuild --check`` over every projection the server has.

A check reads the log's server events and the live tables in one snapshot, replays the
events and compares (``compare``). A rebuild does the same inside one write
transaction that holds the writers' locks (the composition root names them, in the
order the writers take them), so no event commits between the replay and the rows
written back (``repair``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy.engine import Connection, Engine

from events.projections.compare import TableCheck, check_table, live_rows, table_exists
from events.projections.model import Key, Projection, ProjectionSet, Row
from events.projections.repair import Rebuilt, rebuild_in
from events.projections.replay import Replayed, replay, replay_types
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
              scope: Mapping[str, Callable[[Row], bool]] | None = None) -> RebuildReport:
        """Every chosen projection replayed and compared with its live table (``scope``: by
        table, which rows to compare; the others are replayed but not judged)."""
        chosen = self._chosen(tables)
        with self._snapshot() as conn:
            replayed, live = self._read(conn, chosen)
        checks = [check_table(p, replayed, live[p.name], (scope or {}).get(p.name)) for p in chosen]
        for found in checks:
            if on_table is not None:
                on_table(found)
        return RebuildReport(checks, [])

    def rebuild(self, tables: Iterable[str] | None = None) -> RebuildReport:
        """The chosen tables made what the log says (missing ones created), atomically."""
        chosen = self._chosen(tables)
        with self.engine.begin() as conn:
            for key in self.locks:
                lock_writers(conn, key)
            replayed, live = self._read(conn, chosen)
            checks = [check_table(p, replayed, live[p.name]) for p in chosen]
            unprojectable = [d for c in checks for d in c.differences if d.kind == "unprojectable"]
            if unprojectable:
                return RebuildReport(checks, [])  # the log itself is at fault: write nothing
            rebuilt = rebuild_in(conn, chosen, replayed, {c.table: c for c in checks}, live)
        return RebuildReport(checks, rebuilt)

    def _read(self, conn: Connection, chosen: list[Projection]
              ) -> tuple[Replayed, dict[str, Mapping[Key, Row] | None]]:
        names = [p.name for p in chosen]
        live: dict[str, Mapping[Key, Row] | None] = {
            p.name: live_rows(conn, p) if table_exists(conn, p.table) else None for p in chosen}
        events = self.store.of_types(replay_types(self.projections, names), conn=conn)
        return replay(self.projections, events, self.sources(conn), names), live

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
