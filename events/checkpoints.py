"""Where each follower of a log has got to: one row per name in ``checkpoints``.

A follower (the Kafka relay, an embedded consumer) stores the last position it has
fully handled. ``save`` takes an optional connection so a follower can commit its
checkpoint in the same transaction as its results, which makes it exactly-once
against the database rather than merely at-least-once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection, Engine

from events.tables import checkpoints as checkpoints_table
from kernel.db import is_postgres, is_psycopg, reading
from kernel.sql import driver_rows, text_array


class Checkpoints:
    """Named positions in the ``checkpoints`` table."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def load(self, name: str) -> int:
        """The saved position for ``name``; 0 (the start of the log) when there is none."""
        with self.engine.connect() as conn:
            return load(conn, name)

    def load_many(self, names: Sequence[str], conn: Connection | None = None) -> dict[str, int]:
        """The saved positions of ``names`` (0 for those without one), in one query; on
        ``conn`` when given."""
        with reading(self.engine, conn) as own:
            if is_psycopg(own):
                rows: Iterable[Sequence[Any]] = driver_rows(own, _LOAD_MANY_SQL, (text_array(names),))
            else:
                rows = own.execute(_LOAD_MANY, {"names": list(names)})
            found = {name: int(position) for name, position in rows}
        return {name: found.get(name, 0) for name in names}

    def load_family(self, name: str) -> dict[str, int]:
        """The saved positions of ``name`` and of every name under it (``name/...``): a
        follower's and those of the shares it was split into (events/log_share.py)."""
        column = checkpoints_table.c.name
        query = (select(column, checkpoints_table.c.position)
                 .where((column == name) | column.startswith(name + "/", autoescape=True)))
        with self.engine.connect() as conn:
            return {found: int(position) for found, position in conn.execute(query)}

    def save(self, name: str, position: int, conn: Connection | None = None) -> None:
        """Set ``name`` to ``position``; joins ``conn``'s transaction when given."""
        if conn is not None:
            save(conn, name, position)
            return
        with self.engine.begin() as own:
            save(own, name, position)


_LOAD_MANY = (select(checkpoints_table.c.name, checkpoints_table.c.position)
              .where(checkpoints_table.c.name.in_(bindparam("names", expanding=True))))


def _upsert(insert: Any) -> Any:
    statement = insert(checkpoints_table).values(
        name=bindparam("name"), position=bindparam("position"), updated_at=bindparam("updated_at"))
    return statement.on_conflict_do_update(
        index_elements=[checkpoints_table.c.name],
        set_={"position": statement.excluded.position, "updated_at": statement.excluded.updated_at},
    )


# Built once: a relay saves after every page, and building the upsert each time cost more
# CPU than the round trip.
_SAVE = {"postgresql": _upsert(pg_insert), "sqlite": _upsert(sqlite_insert)}


def load(conn: Connection, name: str) -> int:
    position = conn.execute(
        select(checkpoints_table.c.position).where(checkpoints_table.c.name == name)
    ).scalar()
    return int(position or 0)


def save(conn: Connection, name: str, position: int) -> None:
    if is_psycopg(conn):
        driver_rows(conn, _SAVE_SQL, (name, position, datetime.now(UTC)))
        return
    statement = _SAVE["postgresql" if is_postgres(conn) else "sqlite"]
    conn.execute(statement, {"name": name, "position": position, "updated_at": datetime.now(UTC)})


# The relay loads and saves its checkpoints at every step: on psycopg these go to the
# driver directly (kernel.sql.driver_rows), the same statements as _LOAD_MANY and _SAVE.
_LOAD_MANY_SQL = "SELECT name, position FROM checkpoints WHERE name = ANY(%s::text[])"
_SAVE_SQL = ("INSERT INTO checkpoints (name, position, updated_at) VALUES (%s, %s, %s) "
             "ON CONFLICT (name) DO UPDATE SET position = EXCLUDED.position, "
             "updated_at = EXCLUDED.updated_at")
