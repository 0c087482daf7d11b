"""Aliases (production, staging, any name) per specialist, moved only by events.

An alias has no row of its own: it is the latest of its ``alias_moves`` (append-only,
keyed by the position of the ``alias.moved`` event). "What did production point to at
T" is the latest move at or before the log's last event recorded by T (events/cut.py).
A rollback is one more move (kind ``rollback``), back to the latest earlier target that
was not itself rolled back from, and it marks the version it leaves ``rolled_back``: a
second rollback never re-deploys what the first one removed. A protected alias moves
only with a second actor's approval (``approvals.py``); every path that moves one here
refuses with ``AliasProtected``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Connection, Engine

from events.cut import cut_at, position_at
from events.store import EventStore
from kernel.clock import utc
from kernel.db import reading
from kernel.errors import Conflict, Invalid, NotFound
from trainer.journal import lock_registry, specialist_stream, write
from trainer.registry.events import AliasMoved
from trainer.registry.model import ROLLED_BACK, AliasMove, AliasWindow
from trainer.registry.projections import ALIAS_PROJECTIONS
from trainer.registry.status import change_status_in, effective_status_in
from trainer.registry.tables import adapter_versions, alias_moves, alias_protections, specialists

ALIAS_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,99}")
_UNSET: Any = object()


class AliasProtected(Conflict):
    """The alias needs a second actor's approval to move (HTTP 409)."""

    code = "alias_protected"


def _move(row: Any) -> AliasMove:
    return AliasMove(position=row.position, specialist=row.specialist, alias=row.alias,
                     adapter_id=row.adapter_id, previous_adapter_id=row.previous_adapter_id,
                     actor=row.actor, reason=row.reason, moved_at=utc(row.moved_at),
                     kind=row.kind)


def is_protected_in(conn: Connection, specialist: str, alias: str) -> bool:
    """Whether moving the alias needs approval (the latest protection row says so)."""
    protected = conn.execute(
        select(alias_protections.c.protected).where(alias_protections.c.specialist == specialist,
                                                    alias_protections.c.alias == alias)
        .order_by(alias_protections.c.position.desc()).limit(1)).scalar()
    return bool(protected)


def rollback_target_in(conn: Connection, specialist: str, alias: str) -> tuple[str, str]:
    """(current target, where a rollback goes): the latest earlier target that is not the
    current one and was not rolled back from since it was last deliberately moved to.

    Raises:
        Conflict: the alias is unset, or no earlier target qualifies.
    """
    rows = conn.execute(select(alias_moves).where(alias_moves.c.specialist == specialist,
                                                  alias_moves.c.alias == alias)
                        .order_by(alias_moves.c.position)).all()
    moves = [_move(r) for r in rows]
    if not moves or moves[-1].adapter_id is None:
        raise Conflict(f"{specialist}/{alias} points nowhere: nothing to roll back")
    current = moves[-1].adapter_id
    rolled_back: set[str] = {current}
    for move in moves:
        if move.kind == "rollback" and move.previous_adapter_id:
            rolled_back.add(move.previous_adapter_id)
        elif move.adapter_id and move.adapter_id != current:
            rolled_back.discard(move.adapter_id)  # moved to deliberately again since
    for move in reversed(moves[:-1]):
        if move.adapter_id and move.adapter_id not in rolled_back:
            return current, move.adapter_id
    raise Conflict(f"{specialist}/{alias} has no earlier target that was not itself rolled "
                   f"back from (current: {current})")


def rollback_in(conn: Connection, store: EventStore, specialist: str, alias: str, actor: str,
                reason: str, approved: bool = False) -> AliasMove:
    """Roll the alias back inside an open transaction; the version left becomes rolled_back."""
    _refuse_if_protected(conn, specialist, alias, approved)
    current, target = rollback_target_in(conn, specialist, alias)
    move = move_in(conn, store, specialist, alias, target, actor,
                   reason or f"rollback from {current} to {target}", kind="rollback",
                   approved=approved)
    status = effective_status_in(conn, current)
    if status != ROLLED_BACK:
        change_status_in(conn, store, current, specialist, ROLLED_BACK, status, actor,
                         f"{specialist}/{alias} rolled back from it to {target}")
    return move


def latest_move(conn: Connection, specialist: str, alias: str,
                upto: int | None = None) -> AliasMove | None:
    """The move in force at log position ``upto`` (now when None; events/cut.py)."""
    query = select(alias_moves).where(alias_moves.c.specialist == specialist,
                                      alias_moves.c.alias == alias)
    if upto is not None:
        query = query.where(alias_moves.c.position <= upto)
    row = conn.execute(query.order_by(alias_moves.c.position.desc()).limit(1)).first()
    return _move(row) if row else None


def all_moves_in(conn: Connection, upto: int) -> list[AliasMove]:
    """The move in force at log position ``upto`` of every alias that pointed somewhere
    then, by specialist and alias."""
    am = alias_moves.c
    latest = (select(func.max(am.position).label("p")).where(am.position <= upto)
              .group_by(am.specialist, am.alias).subquery())
    moves = [_move(r) for r in conn.execute(select(alias_moves).join(latest, am.position == latest.c.p))]
    return sorted((m for m in moves if m.adapter_id), key=lambda m: (m.specialist, m.alias))


def _refuse_if_protected(conn: Connection, specialist: str, alias: str, approved: bool) -> None:
    if not approved and is_protected_in(conn, specialist, alias):
        raise AliasProtected(
            f"{specialist}/{alias} is protected: request the move (POST /v1/specialists/"
            f"{specialist}/aliases/{alias}/requests, or hcp alias request) and have another "
            "key approve it")


def move_in(
    conn: Connection, store: EventStore, specialist: str, alias: str, adapter_id: str | None,
    actor: str, reason: str, expected_current: str | None = _UNSET, kind: str = "move",
    approved: bool = False,
) -> AliasMove:
    """Move ``alias`` inside an open transaction (the caller holds the registry lock).

    ``approved``: a second actor approved the move (only ``approvals.py`` says so).

    Raises:
        Invalid: a malformed alias name or an adapter of another specialist.
        NotFound: no such adapter.
        AliasProtected: the alias is protected and the move was not approved.
        Conflict: ``expected_current`` differs from the current target, or no change.
    """
    if not ALIAS_NAME.fullmatch(alias):
        raise Invalid(f"alias '{alias}' must match {ALIAS_NAME.pattern}")
    _refuse_if_protected(conn, specialist, alias, approved)
    if adapter_id is not None:
        owner = conn.execute(select(adapter_versions.c.specialist)
                             .where(adapter_versions.c.adapter_id == adapter_id)).scalar()
        if owner is None:
            raise NotFound(f"no adapter version '{adapter_id}'")
        if owner != specialist:
            raise Invalid(f"adapter '{adapter_id}' belongs to '{owner}', not '{specialist}'")
    current = latest_move(conn, specialist, alias)
    current_id = current.adapter_id if current else None
    if expected_current is not _UNSET and expected_current != current_id:
        raise Conflict(f"{specialist}/{alias} points to {current_id}, not {expected_current}")
    if current_id == adapter_id:
        raise Conflict(f"{specialist}/{alias} already points to {adapter_id}")
    done = write(store, conn, ALIAS_PROJECTIONS, specialist_stream(specialist), AliasMoved(
        specialist=specialist, alias=alias, adapter_id=adapter_id, previous_adapter_id=current_id,
        reason=reason, kind="rollback" if kind == "rollback" else "move",
    ), actor, specialist=specialist, adapter_version=adapter_id)
    return AliasMove(position=done.position, specialist=specialist, alias=alias,
                     adapter_id=adapter_id, previous_adapter_id=current_id, actor=actor,
                     reason=reason, moved_at=done.recorded_at, kind=kind)


class Aliases:
    def __init__(self, engine: Engine, store: EventStore) -> None:
        self.engine, self.store = engine, store

    def move(self, specialist: str, alias: str, adapter_id: str | None, actor: str,
             reason: str, expected_current: str | None = _UNSET) -> AliasMove:
        """Point ``alias`` at ``adapter_id`` (None removes it); one event, one row."""
        with self.engine.begin() as conn:
            lock_registry(conn)
            self._require_specialist(conn, specialist)
            return move_in(conn, self.store, specialist, alias, adapter_id, actor, reason,
                           expected_current)

    def rollback(self, specialist: str, alias: str, actor: str, reason: str) -> AliasMove:
        """Move ``alias`` back to the latest earlier target that was not itself rolled back
        from; the version it leaves becomes ``rolled_back``. The move says both."""
        with self.engine.begin() as conn:
            lock_registry(conn)
            self._require_specialist(conn, specialist)
            return rollback_in(conn, self.store, specialist, alias, actor, reason)

    def rollback_target(self, specialist: str, alias: str) -> tuple[str, str]:
        """(current target, where ``rollback`` would go now), to show before doing it.

        Raises:
            Conflict: the alias is unset, or no earlier target qualifies.
        """
        with self.engine.connect() as conn:
            self._require_specialist(conn, specialist)
            return rollback_target_in(conn, specialist, alias)

    def at(self, specialist: str, alias: str, at: datetime | None = None) -> AliasMove | None:
        """The move in effect at ``at`` (now when None); None if the alias was unset then."""
        with self.engine.connect() as conn:
            self._require_specialist(conn, specialist)
            return latest_move(conn, specialist, alias, cut_at(conn, at))

    def history(self, specialist: str, alias: str | None = None, limit: int = 100,
                before: int | None = None) -> list[AliasMove]:
        """Moves newest first, of one alias or of all the specialist's aliases;
        ``before`` (a move's position) pages back."""
        query = select(alias_moves).where(alias_moves.c.specialist == specialist)
        if alias is not None:
            query = query.where(alias_moves.c.alias == alias)
        if before is not None:
            query = query.where(alias_moves.c.position < before)
        with self.engine.connect() as conn:
            self._require_specialist(conn, specialist)
            rows = conn.execute(query.order_by(alias_moves.c.position.desc()).limit(limit))
            return [_move(r) for r in rows]

    def current(self, specialist: str) -> dict[str, AliasMove]:
        """Every alias of the specialist that points somewhere now."""
        latest = (select(alias_moves.c.alias, func.max(alias_moves.c.position).label("p"))
                  .where(alias_moves.c.specialist == specialist)
                  .group_by(alias_moves.c.alias).subquery())
        query = select(alias_moves).join(latest, alias_moves.c.position == latest.c.p)
        with self.engine.connect() as conn:
            self._require_specialist(conn, specialist)
            moves = [_move(r) for r in conn.execute(query)]
        return {m.alias: m for m in sorted(moves, key=lambda m: m.alias) if m.adapter_id}

    def all_at(self, at: datetime) -> list[AliasMove]:
        """The move in effect at ``at`` of every alias that pointed somewhere then."""
        with self.engine.connect() as conn:
            return all_moves_in(conn, position_at(conn, at))

    def windows(self, adapter_ids: Iterable[str], conn: Connection | None = None) -> list[AliasWindow]:
        """Every span during which an alias pointed at one of ``adapter_ids``: from the
        move that set it to the next move of that alias (None: it still does)."""
        am, nxt = alias_moves.c, alias_moves.alias("nxt").c
        following = (select(func.min(nxt.position))
                     .where(nxt.specialist == am.specialist, nxt.alias == am.alias,
                            nxt.position > am.position).scalar_subquery())
        ids = sorted(set(adapter_ids))
        opened: list[Any] = []
        with reading(self.engine, conn) as c:
            for start in range(0, len(ids), 500):
                query = (select(am.position, am.specialist, am.alias, am.adapter_id, am.moved_at,
                                following.label("until_position"))
                         .where(am.adapter_id.in_(ids[start:start + 500])))
                opened += c.execute(query).all()
            ends = [r.until_position for r in opened if r.until_position is not None]
            until = dict(c.execute(select(am.position, am.moved_at)
                                      .where(am.position.in_(ends))).all()) if ends else {}
        return sorted((AliasWindow(
            specialist=r.specialist, alias=r.alias, adapter_id=r.adapter_id, since=utc(r.moved_at),
            since_position=r.position, until=utc(until[r.until_position]) if r.until_position else None,
            until_position=r.until_position) for r in opened),
            key=lambda w: w.since_position)

    @staticmethod
    def _require_specialist(conn: Connection, name: str) -> None:
        found = conn.execute(select(specialists.c.name).where(specialists.c.name == name)).first()
        if found is None:
            raise NotFound(f"no specialist '{name}'")
