"""Protected aliases: moving one needs a second actor's approval (the "protected alias").

An operator protects an alias of a specialist (``alias.protection_changed``). From then
on a move, a rollback or a promotion onto it is refused outright; instead one actor
*requests* it (``alias.move_requested``) and another approves it
(``alias.move_approved``, followed by the ``alias.moved`` it causes) or rejects it
(``alias.move_rejected``). The requester cannot approve their own request, and an
approval finds the alias where the request found it, or it is refused: a request is
about a state, not a blind instruction. Every step is an event and an append-only row.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection, Engine

from events.store import EventStore
from kernel.clock import utc
from kernel.errors import Conflict, Invalid, NotFound
from kernel.values import JsonValue
from trainer.journal import lock_registry, specialist_stream, write
from trainer.registry.aliases import (
    is_protected_in,
    latest_move,
    move_in,
    rollback_in,
    rollback_target_in,
)
from trainer.registry.events import (
    AliasMoveApproved,
    AliasMoveRejected,
    AliasMoveRequested,
    AliasProtectionChanged,
)
from trainer.registry.in_transaction import require_specialist_in
from trainer.registry.model import AliasMove
from trainer.registry.projections import ALIAS_PROJECTIONS
from trainer.registry.tables import alias_move_decisions as decisions
from trainer.registry.tables import alias_move_requests as requests


@dataclass(frozen=True)
class MoveRequest(JsonValue):
    request_id: str
    specialist: str
    alias: str
    kind: str  # move | rollback
    adapter_id: str | None
    expected_current: str | None
    requested_by: str
    reason: str
    requested_at: datetime
    status: str = "pending"  # pending | approved | rejected
    decided_by: str | None = None


def request_in(conn: Connection, store: EventStore, specialist: str, alias: str,
               adapter_id: str | None, actor: str, reason: str, rollback: bool = False) -> MoveRequest:
    """Ask for a move of a protected alias (inside the caller's locked transaction)."""
    if not is_protected_in(conn, specialist, alias):
        raise Conflict(f"{specialist}/{alias} is not protected: move it directly")
    current = latest_move(conn, specialist, alias)
    current_id = current.adapter_id if current else None
    if rollback:
        adapter_id = rollback_target_in(conn, specialist, alias)[1]
    request_id = str(uuid.uuid4())
    done = write(store, conn, ALIAS_PROJECTIONS, specialist_stream(specialist), AliasMoveRequested(
        request_id=request_id, specialist=specialist, alias=alias,
        kind="rollback" if rollback else "move", adapter_id=adapter_id,
        expected_current=current_id, reason=reason,
    ), actor, specialist=specialist, adapter_version=adapter_id)
    return MoveRequest(request_id, specialist, alias, done.event.kind, adapter_id, current_id, actor,
                       reason, done.recorded_at)


class Approvals:
    def __init__(self, engine: Engine, store: EventStore) -> None:
        self.engine, self.store = engine, store

    def protect(self, specialist: str, alias: str, protected: bool, actor: str,
                reason: str) -> dict[str, Any]:
        """Require (or stop requiring) a second actor's approval to move the alias."""
        with self.engine.begin() as conn:
            lock_registry(conn)
            require_specialist_in(conn, specialist)
            if is_protected_in(conn, specialist, alias) == protected:
                raise Conflict(f"{specialist}/{alias} is already "
                               f"{'protected' if protected else 'unprotected'}")
            write(self.store, conn, ALIAS_PROJECTIONS, specialist_stream(specialist),
                  AliasProtectionChanged(specialist=specialist, alias=alias, protected=protected,
                                         reason=reason), actor, specialist=specialist)
        return self.protection(specialist, alias)

    def protection(self, specialist: str, alias: str) -> dict[str, Any]:
        with self.engine.connect() as conn:
            require_specialist_in(conn, specialist)
            return {"specialist": specialist, "alias": alias,
                    "protected": is_protected_in(conn, specialist, alias)}

    def request(self, specialist: str, alias: str, adapter_id: str | None, actor: str,
                reason: str, rollback: bool = False) -> MoveRequest:
        with self.engine.begin() as conn:
            lock_registry(conn)
            require_specialist_in(conn, specialist)
            return request_in(conn, self.store, specialist, alias, adapter_id, actor, reason,
                              rollback)

    def approve(self, request_id: str, actor: str, reason: str = "") -> AliasMove:
        """Carry out a pending request as ``actor``, who must not be its requester."""
        with self.engine.begin() as conn:
            lock_registry(conn)
            found = self._pending_in(conn, request_id, actor)
            current = latest_move(conn, found.specialist, found.alias)
            if (current.adapter_id if current else None) != found.expected_current:
                raise Conflict(f"{found.specialist}/{found.alias} moved since request "
                               f"{request_id} was made; request again")
            self._decide(conn, found, "approved", actor, reason)
            why = f"requested by {found.requested_by} ({request_id}): {found.reason}"
            if found.kind == "rollback":
                return rollback_in(conn, self.store, found.specialist, found.alias, actor, why,
                                   approved=True)
            return move_in(conn, self.store, found.specialist, found.alias, found.adapter_id,
                           actor, why, approved=True)

    def reject(self, request_id: str, actor: str, reason: str = "") -> MoveRequest:
        with self.engine.begin() as conn:
            lock_registry(conn)
            found = self._pending_in(conn, request_id, None)
            self._decide(conn, found, "rejected", actor, reason)
        return self.get(request_id)

    def get(self, request_id: str) -> MoveRequest:
        with self.engine.connect() as conn:
            return _request_in(conn, request_id)

    def pending(self, specialist: str | None = None) -> list[MoveRequest]:
        query = (select(requests.c.request_id)
                 .outerjoin(decisions, decisions.c.request_id == requests.c.request_id)
                 .where(decisions.c.request_id.is_(None)).order_by(requests.c.position))
        if specialist is not None:
            query = query.where(requests.c.specialist == specialist)
        with self.engine.connect() as conn:
            return [_request_in(conn, rid) for rid in conn.execute(query).scalars()]

    def _pending_in(self, conn: Connection, request_id: str, approver: str | None) -> MoveRequest:
        found = _request_in(conn, request_id)
        if found.status != "pending":
            raise Conflict(f"request {request_id} was already {found.status}")
        if approver is not None and approver == found.requested_by:
            raise Invalid(f"request {request_id} was made by {approver}: another key must "
                          "approve it")
        return found

    def _decide(self, conn: Connection, found: MoveRequest, decision: str, actor: str,
                reason: str) -> None:
        made = AliasMoveApproved if decision == "approved" else AliasMoveRejected
        write(self.store, conn, ALIAS_PROJECTIONS, specialist_stream(found.specialist),
              made(request_id=found.request_id, specialist=found.specialist, alias=found.alias,
                   reason=reason), actor, specialist=found.specialist, adapter_version=found.adapter_id)


def _request_in(conn: Connection, request_id: str) -> MoveRequest:
    row = conn.execute(select(requests).where(requests.c.request_id == request_id)).first()
    if row is None:
        raise NotFound(f"no alias move request '{request_id}'")
    decided = conn.execute(select(decisions).where(decisions.c.request_id == request_id)).first()
    data = {key: row._mapping[key] for key in ("request_id", "specialist", "alias", "kind",
                                               "adapter_id", "expected_current", "requested_by",
                                               "reason")}
    return MoveRequest(**data, requested_at=utc(row.requested_at),
                       status=decided.decision if decided else "pending",
                       decided_by=decided.actor if decided else None)
