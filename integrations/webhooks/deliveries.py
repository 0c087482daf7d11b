"""Every delivery attempt, as ``GET /v1/webhooks/{id}/deliveries`` shows it: working state
(what was sent and what came back), written by the deliverer and by redelivery requests."""

from __future__ import annotations

import uuid
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Connection, Engine

from events.model import RecordedEvent
from integrations.webhooks.model import Delivery
from integrations.webhooks.tables import webhook_deliveries as table
from kernel.errors import NotFound

QUEUED, SUCCEEDED, FAILED = "queued", "succeeded", "failed"


class DeliveryNotFound(NotFound):
    pass


@dataclass(frozen=True)
class Outcome:
    ok: bool
    response_status: int | None
    error: str | None
    duration_ms: float


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

    def get(self, subscription_id: str, delivery_id: str) -> Delivery:
        with self.engine.connect() as conn:
            row = conn.execute(select(table).where(table.c.subscription_id == subscription_id,
                                                   table.c.delivery_id == delivery_id)).first()
        if row is None:
            raise DeliveryNotFound(f"no delivery {delivery_id} of webhook {subscription_id}")
        return _delivery(row._mapping)

    def queue_redelivery(self, subscription_id: str, delivery_id: str, actor: str) -> Delivery:
        """A new attempt at the same event, sent by the deliverer at its next step."""
        done = self.get(subscription_id, delivery_id)
        new_id = str(uuid.uuid4())
        row = {"delivery_id": new_id, "subscription_id": subscription_id,
               "event_id": done.event_id, "position": done.position, "event_type": done.event_type,
               "attempt": done.attempt, "status": QUEUED, "redelivery": 1, "response_status": None,
               "error": None, "duration_ms": None, "requested_by": actor,
               "created_at": datetime.now(UTC), "finished_at": None}
        with self.engine.begin() as conn:
            conn.execute(table.insert().values(**row))
        return self.get(subscription_id, new_id)

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
