"""An incremental check of the projections: every row the events after a position wrote,
and a seeded sample of the older rows (``hcp audit all --since-checkpoint``).

A held projection (a row per thing the server knows) is replayed whole, since its
projectors read the rows before, but only some rows are compared column by column: those
whose last event is after ``Window.after``, and ``Window.sample`` of the others, drawn
with a seeded generator from the keys the *log* makes (not the table's), so a second
auditor with the same seed draws the same rows whatever was done to the table. Every
live key is still held against the log's keys: a ghost row or a deleted one is named
wherever it is.

A grouped projection (a manifest's members: each group made by one event, read by no
projector) is not replayed whole: only the events after ``after`` and a seeded sample of
the older ones are projected, and only their groups are compared (by digest where the
database gives one). A ghost group among the older ones is left to the full check.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy import select, tuple_
from sqlalchemy.engine import Connection

from events.model import RecordedEvent
from events.projections.compare import (
    Difference,
    TableCheck,
    canonical_keys,
    judge,
    scan_live,
    unprojectable,
)
from events.projections.model import Change, Insert, InsertMany, Key, Projection, ProjectionError, Row
from events.projections.replay import MemoryState, Problem, Replayed
from events.projections.sql import bind_row
from events.server_events import Logged, NotAServerEvent, logged

T = TypeVar("T")


@dataclass(frozen=True)
class Window:
    """What an incremental check covers: the rows events after position ``after`` wrote,
    ``sample`` older rows per held table and the groups of ``groups`` older events per
    grouped table, drawn with ``seed``."""

    after: int
    sample: int
    seed: str
    groups: int = 2  # older groups of a grouped table (a manifest and its thousands of rows)

    def pick(self, name: str, candidates: Iterable[T], count: int | None = None) -> list[T]:
        """``count`` (default ``sample``) of ``candidates``, or all of them; the same for the
        same seed, name and candidates in any order."""
        ordered = sorted(candidates, key=repr)
        # Repeatable by design (a second auditor redraws it); what keeps a forger from
        # knowing the draw in advance is a seed chosen when the audit runs.
        draw = random.Random(f"{self.seed}/{name}")  # noqa: S311
        drawn = draw.sample(ordered, min(self.sample if count is None else count, len(ordered)))
        return sorted(drawn, key=repr)

    def pick_positions(self, name: str, upto: int) -> list[int]:
        """``sample`` of the positions 1..``upto`` (a log's, a reward chain's), drawn as
        ``pick`` draws, without listing them."""
        draw = random.Random(f"{self.seed}/{name}")  # noqa: S311 (repeatable: see pick)
        return sorted(draw.sample(range(1, upto + 1), min(self.sample, max(upto, 0))))


@dataclass
class Covered:
    """What the check of one table covered."""

    new: int = 0  # rows (groups) written after the window's position, compared
    sampled: int = 0  # older rows (groups) compared
    older: int = 0  # older rows (groups) the sample was drawn from
    sample: list[str] = field(default_factory=list)  # the sampled rows' keys, or "event N", as text
    positions: list[int] = field(default_factory=list)  # a grouped table's: the sampled events
    keys: list[Key] = field(default_factory=list)  # a held table's: the sampled rows' keys
    new_keys: list[Key] = field(default_factory=list)  # a held table's: the window's rows' keys

    def to_json(self) -> dict[str, Any]:
        return {"new": self.new, "sampled": self.sampled, "older": self.older, "sample": self.sample}


def judge_held(projection: Projection, replayed: Replayed, conn: Connection | None,
               window: Window) -> tuple[TableCheck, Covered]:
    """A held projection's rows in the window compared (read whole); every live key (read
    alone) held to the log's; ``conn`` None: the table is missing."""
    name = projection.name
    found = TableCheck(name, differences=[unprojectable(p) for p in replayed.problems if p.table == name])
    origins, rows = replayed.origins[name], replayed.rows[name]
    expected = dict(zip(canonical_keys(projection, rows), ((row, origins[k]) for k, row in rows.items()),
                        strict=True))
    new = {k for k, (_, origin) in expected.items() if origin.position > window.after}
    older = [k for k in expected if k not in new]
    sampled = window.pick(name, older)
    covered = Covered(len(new), len(sampled), len(older), [projection.key_text(k) for k in sampled],
                      keys=sampled, new_keys=sorted(new, key=repr))
    if conn is None:
        return found, covered
    live, chosen = live_keys(conn, projection), new | set(sampled)
    judge(projection, {k: v for k, v in expected.items() if k in chosen},
          live_rows_of(conn, projection, chosen & live), found)
    for key in sorted(live - set(expected), key=repr):
        found.differences.append(Difference(name, projection.key_text(key), "extra",
                                            "no event creates this row", None, key))
    unjudged = {k: v for k, v in expected.items() if k not in live and k not in chosen}
    for key, (_, origin) in sorted(unjudged.items(), key=lambda item: item[1][1].position):
        found.differences.append(Difference(name, projection.key_text(key), "missing",
                                            f"the row is missing; {origin.text()} creates it",
                                            origin.position, key))
    return found, covered


def live_keys(conn: Connection, projection: Projection) -> set[Key]:
    """Every live row's key (its primary key columns alone), canonical."""
    columns = [projection.table.c[name] for name in projection.key_columns]
    return set(canonical_keys(projection, (tuple(row) for row in conn.execute(select(*columns)))))


def live_rows_of(conn: Connection, projection: Projection, keys: Iterable[Key]) -> Iterator[Row]:
    """The live rows with ``keys``, whole, in the comparison's form."""
    columns = list(projection.table.primary_key.columns)
    wanted = sorted(keys, key=repr)
    for start in range(0, len(wanted), 400):  # 400 keys of up to two columns: under SQLite's limit
        chunk = [tuple(bind_row(projection.table, dict(zip((c.name for c in columns), key, strict=True)))
                       .values()) for key in wanted[start:start + 400]]
        yield from scan_live(conn, projection, tuple_(*columns).in_(chunk))


@dataclass
class GroupedWindow:
    """The events of the grouped projections a window covers, projected once: their
    changes (in log order) and the groups each table's changes make."""

    made: list[tuple[Projection, Logged[Any], Sequence[Change]]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    groups: dict[str, set[Any]] = field(default_factory=dict)


def project_grouped(grouped: Sequence[Projection], events: Iterable[RecordedEvent],
                    sources: Mapping[str, Callable[..., Any]]) -> GroupedWindow:
    """``events`` through the grouped projectors (they read no rows, only sources)."""
    out = GroupedWindow(groups={p.name: set() for p in grouped})
    state = MemoryState([], sources)
    for recorded in events:
        try:
            done = logged(recorded)
        except NotAServerEvent as exc:
            out.problems.extend(Problem(p.name, recorded.position, str(exc)) for p in grouped
                                if any(recorded.type == c.TYPE for c in p.events))
            continue
        for projection in grouped:
            if type(done.event) not in projection.events:
                continue
            try:
                changes = projection.project(done, state)
            except ProjectionError as exc:
                out.problems.append(Problem(projection.name, done.position, f"{done.type}: {exc}"))
                continue
            out.made.append((projection, done, changes))
            out.groups[projection.name] |= set(_groups(projection, changes))
    return out


def _groups(projection: Projection, changes: Sequence[Change]) -> Iterable[Any]:
    column = projection.group
    assert column is not None
    for change in changes:
        if change.table != projection.name:
            continue
        if isinstance(change, Insert):
            yield change.row.get(column)
        elif isinstance(change, InsertMany) and column in change.columns:
            at = change.columns.index(column)
            yield from {values[at] for values in change.values}
