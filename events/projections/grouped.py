"""A grouped projection (``Projection.group``: a manifest's members) checked one event's rows
at a time, so that no check holds such a table whole.

Each group (the rows with one value of the group column) comes from one event. Where the
database gives digests (``digest``: PostgreSQL, one statement for the whole table, run on
a second connection in the replay's snapshot while the replay goes on), the replay keeps
only each group's digest, and at the end a group whose digests differ is made again from
its event and compared row by row. Otherwise each group is read and compared as the replay
reaches its event. A difference is reported exactly as for a held table: the row by its
key, and the position of the event it should come from. Live groups no event made are
read at the end, each of their rows a ghost. A group that two events make (a log that
froze one manifest twice) is judged at the end from all of its events (``rejudge``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from sqlalchemy import Integer, String, Uuid, select
from sqlalchemy.engine import Connection

from events.projections.compare import (
    Difference,
    Scope,
    TableCheck,
    Where,
    canonical,
    judge,
    scan_live,
    unprojectable,
)
from events.projections.digest import Digester, compared_columns
from events.projections.model import Change, Insert, Key, Projection, Row, Update
from events.projections.replay import Origin, Problem, again
from events.server_events import Logged

Values = tuple[Any, ...]  # a row's compared columns, in table order


@dataclass
class _Made:
    """The event(s) that made a group."""

    origin: Origin
    event_ids: list[str] = field(default_factory=list)


# The live groups' digests, by group value, once the database has given them.
LiveDigests = Callable[[], dict[Any, tuple[int, str]]]
# A group's events made again (their changes to every table), in log order.
Reproject = Callable[[Sequence[str]], list[tuple[Logged[Any], Sequence[Change]]]]


class GroupedCheck:
    """The check of one grouped table, fed each event's changes as the replay reaches it;
    ``live``: the live groups' digests (None: read each group instead)."""

    def __init__(self, conn: Connection, projection: Projection, scope: Scope | None = None,
                 live: LiveDigests | None = None) -> None:
        assert projection.group is not None
        self.conn, self.projection, self.scope = conn, projection, scope
        self.column = projection.table.c[projection.group]
        self.names = compared_columns(projection)
        self.keys_of = _keyer(projection, self.names)
        self.group_at = projection.key_columns.index(projection.group)
        self.groups = frozenset(scope.values) if isinstance(scope, Where) and \
            scope.column == projection.group else None  # only these (None: every group)
        self.predicate = None if self.groups is not None else scope  # applied row by row
        self.digest = Digester(projection)
        self.live = live if self.predicate is None else None
        self.digests: dict[Any, tuple[int, str | None]] = {}  # by group: the replay's rows, digested
        self.made: dict[Any, _Made] = {}
        self.repeated: set[Any] = set()
        self.problems: list[Difference] = []
        self.judged: dict[Any, TableCheck] = {}  # by group: its rows compared, its differences

    # --- the replay's side (events.projections.replay.Sink) ------------------------------

    def wants(self, done: Logged[Any]) -> bool:
        """A check of some groups skips the events of the others before projecting them."""
        of = self.projection.event_group
        return self.groups is None or of is None or canonical(self.column, of(done)) in self.groups

    def problem(self, found: Problem) -> None:
        self.problems.append(unprojectable(found))

    def add(self, done: Logged[Any], changes: Sequence[Change]) -> None:
        origin = Origin(done.position, done.type)
        for group, rows in self.rows_by_group(done, changes, report=True).items():
            made = self.made.get(group)
            if made is not None:
                made.event_ids.append(str(done.event_id))
                self.repeated.add(group)
                continue
            self.made[group] = _Made(origin, [str(done.event_id)])
            if self.groups is not None and group not in self.groups:
                continue
            if self.live is not None:
                self.digests[group] = (len(rows), self.digest(list(rows.values())))
            else:
                self.judged[group] = self.judge_group(group, rows, origin)

    def rows_by_group(self, done: Logged[Any], changes: Sequence[Change],
                      report: bool) -> dict[Any, dict[Key, Values]]:
        """The event's rows by group and canonical key (a key the event repeats: a problem,
        when ``report``)."""
        groups: dict[Any, dict[Key, Values]] = {}
        name = self.projection.name
        for change in changes:
            if change.table != name or isinstance(change, Update):
                if report:
                    what = f"wrote {change.table}, not its own table" if change.table != name else \
                        "updates a row of a table whose rows are only ever inserted"
                    self.problem(Problem(name, done.position, f"its projector {what}"))
                continue
            values = self._values(change)
            keys = self.keys_of(values)
            if not groups and len(set(map(itemgetter(self.group_at), keys))) == 1:
                at_once = dict(zip(keys, values, strict=True))  # one group, no repeats: a manifest's rows
                if len(at_once) == len(values):
                    groups[keys[0][self.group_at]] = at_once
                    continue
            for key, row in zip(keys, values, strict=True):
                rows = groups.setdefault(key[self.group_at], {})
                if key in rows:
                    if report:
                        self.problem(again(self.projection, done.type, done.position, key,
                                           Origin(done.position, done.type)))
                    continue
                rows[key] = row
        return groups

    def _values(self, change: Insert | Any) -> list[Values]:
        if isinstance(change, Insert):
            return [tuple(change.row.get(n) for n in self.names)]
        if tuple(change.columns) == tuple(self.names):
            return list(change.values)
        at = [change.columns.index(n) if n in change.columns else None for n in self.names]
        return [tuple(None if i is None else v[i] for i in at) for v in change.values]

    # --- judging ---------------------------------------------------------------------------

    def judge_group(self, group: Any, rows: dict[Key, Values], origin: Origin) -> TableCheck:
        """The group's rows against the live ones, read."""
        found = TableCheck(self.projection.name)
        expected = {k: (self._row(v), origin) for k, v in rows.items()
                    if self.predicate is None or self.predicate(self._row(v))}
        judge(self.projection, expected, self._live_group(group), found)
        return found

    def rejudge(self, group: Any, made: Sequence[tuple[Logged[Any], Sequence[Change]]]) -> None:
        """A group several events made, judged from all of them (in log order) as a replay
        holding the table would: a row an earlier event created is created again."""
        rows: dict[Key, tuple[Values, Origin]] = {}
        for done, changes in made:
            origin = Origin(done.position, done.type)
            for key, values in self.rows_by_group(done, changes, report=False).get(group, {}).items():
                if key in rows:
                    self.problem(again(self.projection, done.type, done.position, key, rows[key][1]))
                    continue
                rows[key] = (values, origin)
        found = TableCheck(self.projection.name)
        expected = {k: (self._row(v), o) for k, (v, o) in rows.items()
                    if self.predicate is None or self.predicate(self._row(v))}
        judge(self.projection, expected, self._live_group(group), found)
        self.judged[group] = found

    def finish(self, reproject: Reproject) -> TableCheck:
        """The table's check: the groups whose digests differ and those several events made
        judged from their events again, then the live groups no event made."""
        live = self.live() if self.live is not None else None
        redo = set(self.repeated)
        for group, digested in self.digests.items():
            if live is not None and digested[1] is not None and live.get(group) == digested:
                self.judged[group] = TableCheck(self.projection.name, rows=digested[0])
            else:
                redo.add(group)
        for group in sorted(redo, key=repr):  # any fixed order
            self.rejudge(group, reproject(self.made[group].event_ids))
        ghosts = (set(live) if live is not None else self._live_groups()) - set(self.made)
        for group in sorted(ghosts, key=repr):
            self.judged[group] = found = TableCheck(self.projection.name)
            judge(self.projection, {}, self._live_group(group), found)
        out = TableCheck(self.projection.name)
        rows_wrong: list[Difference] = []
        missing: list[Difference] = []
        for found in self.judged.values():
            out.rows += found.rows
            for why, count in found.bounded.items():
                out.bounded[why] = out.bounded.get(why, 0) + count
            for d in found.differences:
                (missing if d.kind == "missing" else rows_wrong).append(d)
        out.differences = (sorted(self.problems, key=lambda d: d.position or 0) + _by_key(rows_wrong)
                           + sorted(_by_key(missing), key=lambda d: d.position or 0))
        return out

    def _live_group(self, group: Any) -> list[Row]:
        rows = scan_live(self.conn, self.projection, self.column == group)
        return [r for r in rows if self.predicate is None or self.predicate(r)]

    def _live_groups(self) -> set[Any]:
        query = select(self.column).distinct()
        if self.groups is not None:
            query = query.where(self.column.in_(sorted(self.groups)))
        return {canonical(self.column, v) for v in self.conn.execute(query).scalars()}

    def _row(self, values: Values) -> Row:
        return dict(zip(self.names, values, strict=True))


class ProblemsOnly:
    """The sink of a grouped table that is missing: its events' problems, and nothing to
    compare the rows with."""

    def __init__(self) -> None:
        self.found: list[Problem] = []

    def wants(self, done: Logged[Any]) -> bool:
        return True

    def add(self, done: Logged[Any], changes: Sequence[Change]) -> None:
        pass

    def problem(self, found: Problem) -> None:
        self.found.append(found)

    def differences(self) -> list[Difference]:
        return [unprojectable(p) for p in self.found]


def _keyer(projection: Projection, names: list[str]) -> Callable[[list[Values]], list[Key]]:
    """Rows' canonical keys from their values. Keys whose values are all of their column's
    canonical type (nearly always: it runs on every member row) are taken as they are,
    without ``canonical``'s dispatch per value."""
    at = [names.index(k) for k in projection.key_columns]
    columns = [projection.table.c[k] for k in projection.key_columns]
    plain = [int if isinstance(c.type, Integer) else str if isinstance(c.type, String | Uuid) else None
             for c in columns]
    pick = itemgetter(*at)

    def keys(rows: list[Values]) -> list[Key]:
        found = list(map(pick, rows)) if len(at) > 1 else [(k,) for k in map(pick, rows)]
        if all(kind is not None and set(map(type, map(itemgetter(j), found))) <= {kind}
               for j, kind in enumerate(plain)):
            return found
        return [tuple(canonical(c, v) for c, v in zip(columns, key, strict=True)) for key in found]

    return keys


def _by_key(differences: list[Difference]) -> list[Difference]:
    try:
        return sorted(differences, key=lambda d: d.key or ())
    except TypeError:  # keys of mixed types (an altered row's): any fixed order will do
        return sorted(differences, key=lambda d: repr(d.key))
