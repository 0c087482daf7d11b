"""Finding sessions in the log: the latest ``session.started`` events, newest first, whose
session matches a filter (tenant, a specialist or adapter version it was served by, how
its episode ended).

A session's specialist and adapter version are on every event of it (its turns may be
served by several), and its outcome is on its ``episode.completed``: each is asked of the
session's own events through the stream index, never of the whole log. A page looks at
the newest ``scan`` sessions before its cursor at most, so a filter that matches almost
nothing costs a bounded read and says how far it looked (``searched_to``) instead of
walking a million events.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, exists, func, select
from sqlalchemy.engine import Engine

from events.store import Closer
from events.tables import events as events_table

SESSION_STARTED = "session.started"
EPISODE_COMPLETED = "episode.completed"
DEFAULT_SCAN = 2000


@dataclass(frozen=True)
class SessionFilter:
    """Which sessions; None means any. ``tenant`` is the one the session started in."""

    tenant: str | None = None
    specialist: str | None = None
    adapter_version: str | None = None
    outcome: str | None = None

    @property
    def per_session(self) -> bool:
        """Whether it asks about the session's own events (not only where it started)."""
        return any((self.specialist, self.adapter_version, self.outcome))


@dataclass(frozen=True)
class SessionPage:
    starts: list[Closer]  # newest first, at most ``limit``
    older: int | None  # pass as ``before`` for the next page; None: nothing older
    searched_to: int | None  # the oldest position looked at when the scan bound stopped the search


class SessionSearch:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def latest(self, where: SessionFilter, before: int | None = None, limit: int = 50,
               scan: int = DEFAULT_SCAN) -> SessionPage:
        """Sessions started before position ``before`` (default: the head) that match."""
        e = events_table.c
        candidates = select(e.position, e.stream_id, e.stream_seq).where(e.type == SESSION_STARTED)
        if before is not None:
            candidates = candidates.where(e.position < before)
        if where.tenant:
            candidates = candidates.where(e.tenant == where.tenant)
        if not where.per_session:  # indexed conditions only: the page itself is the bound
            return self._page(candidates, limit, e.position)
        window = candidates.order_by(e.position.desc()).limit(scan).subquery("candidates")
        query = select(window.c.position, window.c.stream_id, window.c.stream_seq).where(
            *_session_conditions(window.c.stream_id, where))
        page = self._page(query, limit, window.c.position)
        if page.older is not None:
            return page
        with self.engine.connect() as conn:  # fewer matches than a page: did the scan bound stop it?
            looked, oldest = conn.execute(select(func.count(), func.min(window.c.position))).one()
        return SessionPage(page.starts, None, int(oldest) if looked >= scan else None)

    def _page(self, query: Select[Any], limit: int,
              position: ColumnElement[int]) -> SessionPage:
        with self.engine.connect() as conn:
            rows = list(conn.execute(query.order_by(position.desc()).limit(limit + 1)))
        starts = [Closer(int(r[0]), str(r[1]), int(r[2])) for r in rows[:limit]]
        return SessionPage(starts, starts[-1].position if len(rows) > limit else None, None)


def _session_conditions(stream_id: ColumnElement[str], where: SessionFilter) -> list[ColumnElement[bool]]:
    """EXISTS over the session's own events (the (stream_id, stream_seq) index) for each
    condition asked."""
    e = events_table.alias("session_event")
    found: list[ColumnElement[bool]] = []

    def any_event(*conditions: ColumnElement[bool]) -> ColumnElement[bool]:
        return exists(select(e.c.position).where(e.c.stream_id == stream_id, *conditions))

    if where.specialist:
        found.append(any_event(e.c.specialist == where.specialist))
    if where.adapter_version:
        found.append(any_event(e.c.adapter_version == where.adapter_version))
    if where.outcome:
        found.append(any_event(and_(e.c.type == EPISODE_COMPLETED,
                                    e.c.payload["outcome"].as_string() == where.outcome)))
    return found
