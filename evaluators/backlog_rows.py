"""The rows of ``judge_backlog``: subjects waiting for a judge, added with the batch's
rewards, claimed, deferred with a reason, and marked done with their reward.

Added in the transaction that stores the rest of the batch's rewards (and, with the
database log, its checkpoint): a subject is either rewarded or waiting, never neither,
whatever crashes when. Insert-or-skip by (subject, contract version), so a redelivered
batch adds nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection

from evaluators.model import subject_tenant
from evaluators.tables import judge_backlog as jb
from kernel.clock import utc, utcnow
from kernel.db import is_postgres

if TYPE_CHECKING:
    from evaluators.scoring import Awaiting

WAITING, DONE = "waiting", "done"


@dataclass(frozen=True)
class Waiting:
    """One subject waiting for a judge (a row of ``judge_backlog``)."""

    subject_id: str
    contract_name: str
    contract_version: int
    subject_kind: str
    stream_id: str
    closer_seq: int
    tenant: str | None
    status: str
    attempts: int
    last_error: str | None
    next_at: datetime
    created_at: datetime

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.subject_id, self.contract_name, self.contract_version)

    def to_json(self) -> dict[str, Any]:
        return {"subject_id": self.subject_id, "contract": f"{self.contract_name}@{self.contract_version}",
                "subject_kind": self.subject_kind, "stream_id": self.stream_id, "status": self.status,
                "attempts": self.attempts, "last_error": self.last_error,
                "next_at": self.next_at.isoformat(), "created_at": self.created_at.isoformat()}


def add_waiting(conn: Connection, awaiting: Sequence[Awaiting]) -> int:
    """The subjects of ``awaiting`` not in the backlog yet, added; how many were."""
    now = utcnow()
    rows = {}
    for item in awaiting:
        subject = item.subject
        closer = subject.closer.stream_seq if subject.closer is not None else subject.last_seq
        rows[(subject.id, item.ref.name, item.ref.version)] = {
            "subject_id": subject.id, "contract_name": item.ref.name,
            "contract_version": item.ref.version, "subject_kind": subject.kind,
            "stream_id": subject.stream_id, "closer_seq": closer, "tenant": subject_tenant(subject),
            "status": WAITING, "attempts": 0, "last_error": None, "next_at": now,
            "created_at": now, "updated_at": now}
    if not rows:
        return 0
    insert = pg_insert if is_postgres(conn) else sqlite_insert
    statement = insert(jb).values(list(rows.values())).on_conflict_do_nothing(
        index_elements=["subject_id", "contract_name", "contract_version"])
    return int(conn.execute(statement).rowcount or 0)


def due(conn: Connection, now: datetime, limit: int) -> list[Waiting]:
    query = (select(jb).where(jb.c.status == WAITING, jb.c.next_at <= now)
             .order_by(jb.c.next_at, jb.c.created_at).limit(limit))
    return [of_row(row._mapping) for row in conn.execute(query)]


def claim(conn: Connection, item: Waiting, now: datetime, until: datetime) -> bool:
    """Whether this process took the row (its ``next_at`` moved from due to ``until``);
    another process that read the same row finds it no longer due and leaves it."""
    moved = conn.execute(jb.update().where(*_is(item), jb.c.status == WAITING,
                                           jb.c.next_at <= now)
                         .values(next_at=until, updated_at=utcnow())).rowcount
    return moved == 1


def defer(conn: Connection, item: Waiting, error: str, wait: timedelta) -> None:
    conn.execute(jb.update().where(*_is(item), jb.c.status == WAITING).values(
        attempts=jb.c.attempts + 1, last_error=error[:2000], next_at=utcnow() + wait,
        updated_at=utcnow()))


def done(conn: Connection, item: Waiting) -> None:
    conn.execute(jb.update().where(*_is(item)).values(status=DONE, updated_at=utcnow()))


def listed(conn: Connection, status: str | None, limit: int, tenant: str | None = None) -> list[Waiting]:
    query = select(jb).order_by(jb.c.created_at, jb.c.subject_id).limit(limit)
    if status is not None:
        query = query.where(jb.c.status == status)
    if tenant is not None:
        query = query.where(jb.c.tenant == tenant)
    return [of_row(row._mapping) for row in conn.execute(query)]


def counts(conn: Connection) -> dict[str, int]:
    rows = conn.execute(select(jb.c.status, func.count()).group_by(jb.c.status))
    return {WAITING: 0, DONE: 0} | {str(status): int(n) for status, n in rows}


def _is(item: Waiting) -> tuple[Any, ...]:
    return (jb.c.subject_id == item.subject_id, jb.c.contract_name == item.contract_name,
            jb.c.contract_version == item.contract_version)


def of_row(row: Any) -> Waiting:
    return Waiting(subject_id=row["subject_id"], contract_name=row["contract_name"],
                   contract_version=row["contract_version"], subject_kind=row["subject_kind"],
                   stream_id=row["stream_id"], closer_seq=row["closer_seq"], tenant=row["tenant"],
                   status=row["status"], attempts=row["attempts"], last_error=row["last_error"],
                   next_at=utc(row["next_at"]), created_at=utc(row["created_at"]))
