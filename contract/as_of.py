"""Which contract versions scored at a cut of the log (events/cut.py): those whose
``contract.published`` event is at or before it and whose ``contract.retired`` is not.

The rows say most of it: the last event of a published row is its publishing, and of a
retired row its retiring (nothing else changes a version once it is published). Only a
version retired after the cut needs the log, to say whether it was published by then;
there are few such, and their streams are read by the stream index.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, or_, select
from sqlalchemy.engine import Connection

from contract.events import Published
from contract.tables import contract_versions as cv
from events.cut import events_upto
from events.server_events import logged

PUBLISHED, RETIRED = "published", "retired"


def active_in(conn: Connection, upto: int | None, name: str | None = None) -> list[Any]:
    """The rows of the versions (of ``name``) that scored at position ``upto`` (None: now),
    by name and version."""
    if upto is None:
        query = select(cv).where(cv.c.status == PUBLISHED)
    else:
        query = select(cv).where(or_(and_(cv.c.status == PUBLISHED, cv.c.last_event_position <= upto),
                                     and_(cv.c.status == RETIRED, cv.c.last_event_position > upto)))
    if name is not None:
        query = query.where(cv.c.name == name)
    rows = list(conn.execute(query.order_by(cv.c.name, cv.c.version)))
    retired_later = [r for r in rows if r.status == RETIRED]
    if upto is None or not retired_later:
        return rows
    published = _published_upto(conn, {r.name for r in retired_later}, upto)
    return [r for r in rows if r.status == PUBLISHED or (r.name, r.version) in published]


def _published_upto(conn: Connection, names: set[str], upto: int) -> set[tuple[str, int]]:
    found = events_upto(conn, [f"contract:{n}" for n in names], [Published.TYPE], upto)
    events = [logged(e).event for e in found]
    return {(e.name, e.version) for e in events if isinstance(e, Published)}
