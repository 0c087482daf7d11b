"""A time as a cut of the log: what held at T is what the log said up to its last event
recorded at or before T.

Every past-time answer (serving moves, alias moves, the scoring contract versions) reads
its projection up to that position instead of comparing the rows' own times: a row's
time can come from another clock than the log's (a version-1 contract row took its
writer's, a moment before its event), and answers read from several tables at one T
agree only when they share one cut.

``recorded_at`` is stamped under the log's writer lock, after the head is read
(events/sql_append.py), so it never decreases along the positions: the cut is found by
narrowing a bracket with a few primary-key reads of sampled positions, not by scanning
the log (which has no index on ``recorded_at``).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from events.catalogue import upcast_event
from events.model import RecordedEvent
from events.sql_rows import event_from_row
from events.tables import events
from kernel.clock import utc

PROBES = 64  # positions sampled per round trip: four rounds narrow 16M events to one

_e = events.c


def position_at(conn: Connection, at: datetime) -> int:
    """The position of the last event recorded at or before ``at`` (naive: UTC); 0 when
    the log holds none that early."""
    moment = utc(at)
    head = conn.execute(select(_e.position, _e.recorded_at).order_by(_e.position.desc()).limit(1)).first()
    if head is None or utc(head.recorded_at) <= moment:
        return int(head.position) if head else 0
    low, high = 0, int(head.position)  # recorded at or before the moment: low (0: none); after: high
    while high - low > 1:
        step = -(-(high - low) // (PROBES + 1))
        sampled = sorted(conn.execute(select(_e.position, _e.recorded_at).where(
            _e.position.in_(list(range(low + step, high, step))))).all())
        if not sampled:  # positions are gapless, so this is a log with a hole: read it exactly
            return _exact(conn, moment, low, high)
        for position, recorded in sampled:
            if utc(recorded) > moment:
                high = position
                break
            low = position
    return low


def cut_at(conn: Connection, at: datetime | None) -> int | None:
    """``position_at`` of ``at``; None for None (now: every row as it stands)."""
    return None if at is None else position_at(conn, at)


def events_upto(conn: Connection, streams: Collection[str], types: Collection[str],
                upto: int) -> list[RecordedEvent]:
    """The events of ``types`` on ``streams`` at or before position ``upto``, in log order
    (upcast to their current schema)."""
    if not streams:
        return []
    query = (select(events).where(_e.stream_id.in_(sorted(set(streams))), _e.type.in_(list(types)),
                                  _e.position <= upto).order_by(_e.position))
    return [upcast_event(event_from_row(row._mapping)) for row in conn.execute(query)]


def _exact(conn: Connection, moment: datetime, low: int, high: int) -> int:
    found = conn.execute(select(func.max(_e.position)).where(
        _e.position > low, _e.position < high, _e.recorded_at <= moment)).scalar()
    return int(found or low)
