"""Training runs: the one mutable projection of the trainer, and its lease.

Status goes queued -> running -> succeeded | failed; every change is also a
``training.*`` event on stream ``training_run:<id>`` (step and loss are not: they are
progress, kept only here). A worker *claims* a run before working on it and holds a
lease it keeps renewing; a task delivered twice (a duplicate send, or Redis restoring an
unacknowledged message) finds the lease held and backs off, and a worker that died
leaves a lease that expires, after which a redelivery takes the run over from scratch
(training is deterministic). Registration checks the lease in its own transaction, so a
worker that lost its lease can never register.

Every transaction here that writes a status takes the registry lock first (and then the
log's lock, by appending its event), the same order as registration: a row lock taken
before the log lock could deadlock against a registration holding the log lock.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection, Engine

from events.projections.sql import set_working_in
from events.store import EventStore
from kernel.clock import utc, utcnow
from kernel.db import reading
from kernel.errors import Conflict, NotFound
from trainer.journal import lock_registry, run_stream, write
from trainer.runs.events import (
    RunEvent,
    TrainingFailed,
    TrainingQueued,
    TrainingRequeued,
    TrainingStarted,
    TrainingSucceeded,
)
from trainer.runs.model import (
    FAILED,
    QUEUED,
    RUNNING,
    SUCCEEDED,
    Claim,
    LeaseLost,
    RunStatus,
    TrainingRun,
)
from trainer.runs.projections import RUN_PROJECTIONS, TRAINING_RUNS
from trainer.runs.tables import training_runs as tr


def _run(row: Any) -> TrainingRun:
    data = dict(row._mapping)
    for key in ("created_at", "updated_at", "started_at", "finished_at", "lease_until"):
        data[key] = utc(data[key]) if data[key] is not None else None
    return TrainingRun(**data)


class Runs:
    def __init__(self, engine: Engine, store: EventStore) -> None:
        self.engine, self.store = engine, store

    def create_in(self, conn: Connection, values: dict[str, Any], reason: str) -> TrainingRun:
        """Queue a run inside the firing's transaction (``values``: its settings)."""
        self._event(conn, values["specialist"], TrainingQueued(
            run_id=values["run_id"], parent_adapter_id=values["parent_adapter_id"],
            base_model=values["base_model"], manifest_id=values["manifest_id"],
            firing_id=values["firing_id"], hyper=values["hyper"], reason=reason,
            gate=values["gate"], total_steps=values["total_steps"],
            policy_source=values.get("policy_source"), policy_author=values.get("policy_author")),
            values["created_by"])
        return self.reload_in(conn, values["run_id"])

    def get(self, run_id: str) -> TrainingRun:
        with self.engine.connect() as conn:
            row = conn.execute(select(tr).where(tr.c.run_id == run_id)).first()
        if row is None:
            raise NotFound(f"no training run '{run_id}'")
        return _run(row)

    def get_many(self, run_ids: Iterable[str],
                 conn: Connection | None = None) -> dict[str, TrainingRun]:
        """The stored runs among ``run_ids``, by id."""
        ids = sorted(set(run_ids))
        found: dict[str, TrainingRun] = {}
        with reading(self.engine, conn) as c:
            for start in range(0, len(ids), 500):
                rows = c.execute(select(tr).where(tr.c.run_id.in_(ids[start:start + 500])))
                found.update((row.run_id, _run(row)) for row in rows)
        return found

    def recent(self, specialist: str | None = None, status: str | None = None,
             limit: int = 50) -> list[TrainingRun]:
        query = select(tr)
        if specialist is not None:
            query = query.where(tr.c.specialist == specialist)
        if status is not None:
            query = query.where(tr.c.status == status)
        with self.engine.connect() as conn:
            rows = conn.execute(query.order_by(tr.c.created_at.desc()).limit(limit))
            return [_run(r) for r in rows]

    def stored_rows(self, run_ids: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Runs (those of ``run_ids``, else all) exactly as stored, for auditors."""
        query = select(tr).order_by(tr.c.created_at)
        wanted = None if run_ids is None else sorted(set(run_ids))
        with self.engine.connect() as conn:
            if wanted is None:
                return [dict(r._mapping) for r in conn.execute(query)]
            return [dict(r._mapping) for start in range(0, len(wanted), 500)
                    for r in conn.execute(query.where(tr.c.run_id.in_(wanted[start:start + 500])))]

    def claim(self, run_id: str, owner: str, lease_seconds: float, max_attempts: int) -> Claim:
        """Take the run for ``owner`` unless it is finished or another live worker holds it."""
        with self.engine.begin() as conn:
            lock_registry(conn)
            row = conn.execute(select(tr).where(tr.c.run_id == run_id)).first()
            if row is None:
                raise NotFound(f"no training run '{run_id}'")
            run, now = _run(row), utcnow()
            if run.status == SUCCEEDED:
                return Claim("done", run)
            if run.status == FAILED:
                return Claim("failed", run)
            held = run.status == RUNNING and run.lease_until is not None and run.lease_until > now
            if held and run.lease_owner != owner:
                return Claim("busy", run, (run.lease_until - now).total_seconds())  # type: ignore[operator]
            if run.attempts >= max_attempts:
                self._finish(conn, run, FAILED, f"gave up after {run.attempts} attempts "
                             f"(last worker: {run.lease_owner})", "system:trainer")
                return Claim("gave_up", self.reload_in(conn, run_id))
            self._event(conn, run.specialist, TrainingStarted(
                run_id=run_id, attempt=run.attempts + 1, worker=owner,
                taken_over_from=run.lease_owner if run.status == RUNNING else None), owner)
            set_working_in(conn, TRAINING_RUNS, tr.c.run_id == run_id, step=0, last_loss=None,
                           lease_until=now + timedelta(seconds=lease_seconds), updated_at=now)
            return Claim("claimed", self.reload_in(conn, run_id))

    def heartbeat(self, run_id: str, owner: str, lease_seconds: float,
                  step: int | None = None, loss: float | None = None,
                  total: int | None = None) -> bool:
        """Renew the lease (and record progress: the step, its loss, the plan's steps);
        False when the lease was lost."""
        now = utcnow()
        values: dict[str, Any] = {"lease_until": now + timedelta(seconds=lease_seconds),
                                  "updated_at": now}
        if step is not None:
            values.update(step=step, last_loss=loss)
        if total is not None:
            values.update(total_steps=total)
        with self.engine.begin() as conn:
            held = (tr.c.run_id == run_id) & (tr.c.lease_owner == owner) & (tr.c.status == RUNNING)
            return bool(set_working_in(conn, TRAINING_RUNS, held, **values))

    def succeed_in(self, conn: Connection, run_id: str, owner: str, adapter_id: str,
                   summary: dict[str, Any]) -> None:
        """Mark succeeded inside the registration transaction, or abort it (LeaseLost)."""
        run = self.reload_in(conn, run_id)
        if run.status != RUNNING or run.lease_owner != owner:
            raise LeaseLost(f"run {run_id} is {run.status} under {run.lease_owner}, not {owner}")
        self._finish(conn, run, SUCCEEDED, None, owner, adapter_id=adapter_id, extra=summary,
                     gate_outcome=summary.get("status"))

    def fail(self, run_id: str, reason: str, owner: str | None = None) -> bool:
        """Mark a queued or running run failed; with ``owner``, only while it holds the lease."""
        with self.engine.begin() as conn:
            lock_registry(conn)
            row = conn.execute(select(tr).where(tr.c.run_id == run_id)).first()
            if row is None:
                raise NotFound(f"no training run '{run_id}'")
            run = _run(row)
            if run.status not in (QUEUED, RUNNING) or (owner is not None and run.lease_owner != owner):
                return False
            self._finish(conn, run, FAILED, reason, owner or "system:trainer")
            return True

    def requeue(self, run_id: str, actor: str, reason: str) -> TrainingRun:
        """Send a failed run round again (same run, same work key); attempts start over."""
        with self.engine.begin() as conn:
            lock_registry(conn)
            run = self.reload_in(conn, run_id)
            if run.status != FAILED:
                raise Conflict(f"run {run_id} is {run.status}; only a failed run can be retried")
            self._event(conn, run.specialist, TrainingRequeued(
                run_id=run_id, reason=reason, previous_error=run.error), actor)
            set_working_in(conn, TRAINING_RUNS, tr.c.run_id == run_id, lease_until=None, step=0,
                           last_loss=None, updated_at=utcnow())
            return self.reload_in(conn, run_id)

    @staticmethod
    def on_parent_in(conn: Connection, specialist: str, parent_adapter_id: str | None,
                     limit: int = 20) -> list[TrainingRun]:
        """The latest runs of ``specialist`` from ``parent_adapter_id`` (None: roots),
        newest first: what the triggers' backoff looks at."""
        parent = (tr.c.parent_adapter_id.is_(None) if parent_adapter_id is None
                  else tr.c.parent_adapter_id == parent_adapter_id)
        query = (select(tr).where(tr.c.specialist == specialist, parent)
                 .order_by(tr.c.created_at.desc()).limit(limit))
        return [_run(r) for r in conn.execute(query)]

    def needing_dispatch(self, queued_for: float) -> list[TrainingRun]:
        """Runs a worker should have but may not: queued for long, or running on a dead lease."""
        now = utcnow()
        query = select(tr).where(
            ((tr.c.status == QUEUED) & (tr.c.updated_at < now - timedelta(seconds=queued_for)))
            | ((tr.c.status == RUNNING) & (tr.c.lease_until < now)))
        with self.engine.connect() as conn:
            return [_run(r) for r in conn.execute(query.order_by(tr.c.created_at))]

    def _finish(self, conn: Connection, run: TrainingRun, status: RunStatus, error: str | None,
                actor: str, adapter_id: str | None = None, extra: dict[str, Any] | None = None,
                gate_outcome: str | None = None) -> None:
        if status == FAILED:
            finished: TrainingFailed | TrainingSucceeded = TrainingFailed(
                run_id=run.run_id, attempt=run.attempts, error=error)
        else:
            assert adapter_id is not None
            summary = extra or {}
            finished = TrainingSucceeded(
                run_id=run.run_id, attempt=run.attempts, adapter_id=adapter_id,
                status=gate_outcome or summary.get("status", ""),
                artifact_sha256=summary.get("artifact_sha256", ""),
                gate_reason=summary.get("gate_reason", ""), examples=summary.get("examples"),
                examples_sha256=summary.get("examples_sha256"))
        self._event(conn, run.specialist, finished, actor, adapter_id)
        set_working_in(conn, TRAINING_RUNS, tr.c.run_id == run.run_id, lease_until=None,
                       updated_at=utcnow())

    def _event(self, conn: Connection, specialist: str, event: RunEvent, actor: str,
               adapter_id: str | None = None) -> None:
        write(self.store, conn, RUN_PROJECTIONS, run_stream(event.run_id), event, actor,
              specialist=specialist, adapter_version=adapter_id)

    @staticmethod
    def reload_in(conn: Connection, run_id: str) -> TrainingRun:
        row = conn.execute(select(tr).where(tr.c.run_id == run_id)).first()
        if row is None:
            raise NotFound(f"no training run '{run_id}'")
        return _run(row)
