"""Every delivery attempt, as ``GET /v1/webhooks/{id}/deliveries`` shows it: working state
(what was sent and what came back), written by the deliverer and by redelivery requests.

Redeliveries are bounded: asking again for an event that is still queued returns the queued
attempt (200 requests for one delivery are one POST), and a subscription may queue at most
``per_hour`` redeliveries in any hour; past that the request is refused with the time until
one is free (429). Both are decided under a lock per subscription, so requests racing each
other cannot pass the bound together."""

from __future__ import annotations

import hashlib
import uuid
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Connection, Engine

from events.model import RecordedEvent
from integrations.webhooks.model import Delivery
from integrations.webhooks.tables import webhook_deliveries as table
from kernel.clock import utc
from kernel.errors import Conflict, NotFound
from kernel.sql import lock_writers

QUEUED, SUCCEEDED, FAILED = "queued", "succeeded", "failed"


HOUR = timedelta(hours=1)


class DeliveryNotFound(NotFound):
    pass


class RedeliveryLimited(Conflict):
    """The subscription has queued its hour's redeliveries (HTTP 429 with Retry-After)."""

    code = "too_many_redeliveries"

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class Outcome:
    ok: bool
    response_status: int | None
    error: str | None
    duration_ms: float | None  # None: a failure (its time tells nothing, see the sender)


class DeliveryLog:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def record(self, subscription_id: str, event: RecordedEvent, attempt: int, outcome: Outcome,
               conn: Connection | None = None) -> None:
        """One attempt of the log's own order (not a redelivery); in ``conn``'s transaction
        when given (the deliverer's, which moves the checkpoint with it)."""
        now = datetime.now(UTC)
        row = {"delivery_id": str(uuid.uuid4()), "subscription_id": subscription_id,
               "event_id": str(event.event_id), "position": event.position, "event_type": event.type,
               "attempt": attempt, "status": SUCCEEDED if outcome.ok else FAILED, "redelivery": 0,
               "response_status": outcome.response_status, "error": outcome.error,
               "duration_ms": outcome.duration_ms, "requested_by": None, "created_at": now,
               "finished_at": now}
        with _writing(self.engine, conn) as own:
            own.execute(table.insert().values(**row))

    def attempts(self, subscription_id: str, event_id: str) -> int:
        """Attempts in log order made so far at one event (redeliveries not counted)."""
        query = select(func.count()).where(table.c.subscription_id == subscription_id,
                                           table.c.event_id == event_id, table.c.redelivery == 0)
        with self.engine.connect() as conn:
            return int(conn.execute(query).scalar() or 0)

    def page(self, subscription_id: str, limit: int = 100,
             before: datetime | None = None) -> list[Delivery]:
        """Newest first; ``before``: older than that (the next page)."""
        query = select(table).where(table.c.subscription_id == subscription_id)
        if before is not None:
            query = query.where(table.c.created_at < before)
        query = query.order_by(table.c.created_at.desc(), table.c.delivery_id).limit(limit)
        with self.engine.connect() as conn:
            return [_delivery(r._mapping) for r in conn.execute(query)]

    def get(self, subscription_id: str, delivery_id: str, conn: Connection | None = None) -> Delivery:
        with _reading(self.engine, conn) as own:
            row = own.execute(select(table).where(table.c.subscription_id == subscription_id,
                                                  table.c.delivery_id == delivery_id)).first()
        if row is None:
            raise DeliveryNotFound(f"no delivery {delivery_id} of webhook {subscription_id}")
        return _delivery(row._mapping)

    def queue_redelivery(self, subscription_id: str, delivery_id: str, actor: str,
                         per_hour: int) -> Delivery:
        """A new attempt at the same event, sent by the deliverer at its next step; the one
        already queued for that event, if there is one.

        Raises:
            DeliveryNotFound: no such delivery of this subscription (404).
            RedeliveryLimited: ``per_hour`` redeliveries were queued in the last hour (429).
        """
        with self.engine.begin() as conn:
            lock_writers(conn, _lock_key(subscription_id))
            done = self.get(subscription_id, delivery_id, conn)
            waiting = conn.execute(select(table.c.delivery_id).where(
                table.c.subscription_id == subscription_id, table.c.event_id == done.event_id,
                table.c.status == QUEUED)).scalar()
            if waiting is not None:
                return self.get(subscription_id, waiting, conn)
            now = datetime.now(UTC)
            self._within_the_hour(conn, subscription_id, now, per_hour)
            new_id = str(uuid.uuid4())
            conn.execute(table.insert().values(
                delivery_id=new_id, subscription_id=subscription_id, event_id=done.event_id,
                position=done.position, event_type=done.event_type, attempt=done.attempt,
                status=QUEUED, redelivery=1, response_status=None, error=None, duration_ms=None,
                requested_by=actor, created_at=now, finished_at=None))
            return self.get(subscription_id, new_id, conn)

    def _within_the_hour(self, conn: Connection, subscription_id: str, now: datetime,
                         per_hour: int) -> None:
        recent = [utc(t) for t in conn.execute(
            select(table.c.created_at).where(table.c.subscription_id == subscription_id,
                                             table.c.redelivery == 1,
                                             table.c.created_at > now - HOUR)
            .order_by(table.c.created_at.desc()).limit(per_hour)).scalars()]
        if len(recent) >= per_hour:
            wait = max(1, int((recent[-1] + HOUR - now).total_seconds()) + 1)
            raise RedeliveryLimited(f"this subscription queued {per_hour} redeliveries in the "
                                    f"last hour; the next may be queued in {wait} s", wait)

    def queued(self, subscription_id: str) -> list[Delivery]:
        query = (select(table).where(table.c.subscription_id == subscription_id,
                                     table.c.status == QUEUED).order_by(table.c.created_at))
        with self.engine.connect() as conn:
            return [_delivery(r._mapping) for r in conn.execute(query)]

    def finish(self, delivery_id: str, outcome: Outcome) -> None:
        with self.engine.begin() as conn:
            conn.execute(table.update().where(table.c.delivery_id == delivery_id).values(
                status=SUCCEEDED if outcome.ok else FAILED, response_status=outcome.response_status,
                error=outcome.error, duration_ms=outcome.duration_ms, finished_at=datetime.now(UTC)))


def _delivery(row: Any) -> Delivery:
    values = dict(row)
    values["redelivery"] = bool(values["redelivery"])
    return Delivery(**values)


def _writing(engine: Engine, conn: Connection | None) -> AbstractContextManager[Connection]:
    return nullcontext(conn) if conn is not None else engine.begin()


def _reading(engine: Engine, conn: Connection | None) -> AbstractContextManager[Connection]:
    return nullcontext(conn) if conn is not None else engine.connect()


def _lock_key(subscription_id: str) -> int:
    """A PostgreSQL advisory lock key of its own per subscription."""
    return int.from_bytes(hashlib.sha256(f"webhook:{subscription_id}".encode()).digest()[:8],
                          "big", signed=True)
