"""One digest per group of a grouped projection, the same from the live table (computed by
PostgreSQL in one statement) and from the replayed rows (computed here), so a check reads
and compares row by row only the groups whose digests differ.

The digest is the SHA-256 of the group's rows as one JSON array of arrays, in key order:
``json_build_array`` of the compared columns on the database side, ``json.dumps`` of the
same values here. Equal digests mean equal rows: JSON tells a number from a string and
ends every value unambiguously, and a value of a type the column does not hold (a string
in an integer column, say) cannot print the way the column's values do. Unequal digests
mean only "read this group": the rows are then compared exactly, so where the two sides
merely print one value differently nothing is reported, it only costs the read.

Integers, strings, UUIDs and booleans print the same from both sides. A time is taken as
its microseconds since 1970 (``extract(epoch …)``, exact on PostgreSQL 14 and later). A
JSON column enters as the text it is stored as, which is ``json.dumps`` of the value the
writer gave (a row written otherwise merely reads as differing, and is compared); its
values must be JSON's own (lists, string keys), as a projector's are, or a value the
database holds equally could digest alike while comparing unequal. A table with other
compared columns (floats) has no digest and is read group by group; so is every table
on SQLite, where reading is cheap.

The database computes the digests on a connection of its own, in the snapshot the replay
reads (``Background``), so its work and the replay's overlap.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from operator import itemgetter
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Integer,
    String,
    Text,
    Uuid,
    cast,
    func,
    literal,
    literal_column,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.engine import Connection, Engine

from events.projections.compare import canonical
from events.projections.model import Projection
from kernel.clock import utc

_PRINTABLE = (Integer, String, Uuid, Boolean, JSON, DateTime)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_IN_CHUNK = 1000  # group values per IN (...)
_SNAPSHOT = re.compile(r"[0-9A-F-]+")
Digests = dict[Any, tuple[int, str]]  # by group value: (rows, digest)
Wanted = Mapping[str, tuple[Projection, Collection[Any] | None]]  # by table: the groups (None: all)


def compared_columns(projection: Projection) -> list[str]:
    return [c.name for c in projection.table.columns if c.name not in projection.working]


def digestible(conn: Connection, projection: Projection) -> bool:
    """Whether the database can give ``projection``'s group digests (PostgreSQL, and every
    compared column one of the printable types)."""
    return conn.dialect.name == "postgresql" and all(
        isinstance(projection.table.c[name].type, _PRINTABLE) for name in compared_columns(projection))


def live_digests(conn: Connection, projection: Projection,
                 groups: Collection[Any] | None = None) -> Digests:
    """Every live group's (row count, digest), by group value (only ``groups`` when given)."""
    assert projection.group is not None
    table = projection.table
    group = table.c[projection.group]
    order = [table.c[k].collate("C") if isinstance(table.c[k].type, String) else table.c[k]
             for k in projection.key_columns]
    values = (_printed(table.c[n]) for n in compared_columns(projection))
    rows = func.string_agg(cast(func.json_build_array(*values), Text),
                           aggregate_order_by(literal_column("', '"), *order))
    array = literal("[", Text).concat(rows).concat("]")
    digest = func.encode(func.sha256(func.convert_to(array, "UTF8")), "hex")
    query = select(group, func.count(), digest).group_by(group)
    found: Digests = {}
    if groups is None:
        chunks: list[Sequence[Any] | None] = [None]
    else:
        wanted = sorted(groups)
        chunks = [wanted[i:i + _IN_CHUNK] for i in range(0, len(wanted), _IN_CHUNK)]
    for chunk in chunks:
        statement = query if chunk is None else query.where(group.in_(chunk))
        for value, count, hexdigest in conn.execute(statement):
            found[canonical(group, value)] = (int(count), str(hexdigest))
    return found


def _printed(column: Any) -> Any:
    if isinstance(column.type, DateTime):
        return cast(func.extract("epoch", column) * 1_000_000, BigInteger)
    return column


class Background:
    """The live digests of some grouped projections, computed on a connection of their own
    in the snapshot of ``conn``'s transaction (PostgreSQL's exported snapshots), while the
    caller goes on replaying: the database's work and the replay's overlap."""

    def __init__(self, engine: Engine, conn: Connection, wanted: Wanted) -> None:
        snapshot = str(conn.execute(text("SELECT pg_export_snapshot()")).scalar())
        if not _SNAPSHOT.fullmatch(snapshot):
            raise ValueError(f"unexpected snapshot id {snapshot!r}")
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="projection-digests")
        self._found = self._pool.submit(self._run, engine, snapshot, dict(wanted))
        self._pool.shutdown(wait=False)

    def of(self, table: str) -> Callable[[], Digests]:
        """What ``table``'s check calls at its end (it waits for the database if need be)."""
        return lambda: self._found.result()[table]

    @staticmethod
    def _run(engine: Engine, snapshot: str, wanted: Wanted) -> dict[str, Digests]:
        with engine.connect() as own:
            own = own.execution_options(isolation_level="REPEATABLE READ")
            with own.begin():
                own.execute(text(f"SET TRANSACTION SNAPSHOT '{snapshot}'"))  # checked: hex and dashes
                return {name: live_digests(own, p, groups) for name, (p, groups) in wanted.items()}


class Digester:
    """The digest of replayed rows (tuples of the compared columns' values, in table order)."""

    def __init__(self, projection: Projection) -> None:
        names = compared_columns(projection)
        self.key = itemgetter(*(names.index(k) for k in projection.key_columns))
        self.times = [i for i, n in enumerate(names) if isinstance(projection.table.c[n].type, DateTime)]

    def __call__(self, rows: Sequence[tuple[Any, ...]]) -> str | None:
        """None when the rows have no digest (a bound of an old event, a value JSON does
        not print, keys that do not sort): the group is then compared row by row."""
        try:
            ordered: list[Any] = sorted(rows, key=self.key)
            if self.times:
                ordered = [self._timeless(row) for row in ordered]
            printed = json.dumps(ordered, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError):
            return None
        return hashlib.sha256(printed.encode()).hexdigest()

    def _timeless(self, row: tuple[Any, ...]) -> list[Any]:
        out = list(row)
        for i in self.times:
            value = out[i]
            if value is not None:
                if not isinstance(value, datetime):
                    raise TypeError("not a time")  # a bound: no digest
                out[i] = (utc(value) - _EPOCH) // _MICROSECOND
        return out
