"""Dry runs as jobs: one row per run with its progress, scored on a thread of this process.

A request starts the job and waits up to ``wait_s`` for it; a small run answers in that
time, a large one answers "202, poll this job". Jobs take turns on one worker thread
(scoring is CPU-bound Python: two at once would only share the same core), each bounded
by the dry run's own time budget. A job whose process died is marked failed when it is
next read (its row stops moving: ``STALE_S`` without progress).
"""

from __future__ import annotations

import logging
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.engine import Engine

from evaluators.dryrun import DryRuns, Selection
from evaluators.tables import dry_run_jobs as jobs_table
from kernel.clock import utc, utcnow
from kernel.errors import NotFound

log = logging.getLogger(__name__)

QUEUED, RUNNING, SUCCEEDED, FAILED = "queued", "running", "succeeded", "failed"
# A running job's row moves every PROGRESS_EVERY_S; a queued one waits behind at most a
# few others (each bounded by the dry-run budget) before it starts.
STALE_S = 900.0
PROGRESS_EVERY_S = 0.5


class DryRunJobNotFound(NotFound):
    pass


@dataclass(frozen=True)
class DryRunJob:
    job_id: str
    contract_name: str
    contract_version: int
    baseline_version: int | None
    selection: dict[str, Any]
    top: int
    max_error_rate: float | None
    tenant: str | None
    created_by: str
    status: str
    done: int
    total: int
    result: dict[str, Any] | None
    error: str | None
    created_at: datetime
    updated_at: datetime

    @property
    def finished(self) -> bool:
        return self.status in (SUCCEEDED, FAILED)

    @property
    def progress(self) -> float:
        return 1.0 if self.status == SUCCEEDED else (self.done / self.total if self.total else 0.0)

    def to_json(self) -> dict[str, Any]:
        body = {k: v for k, v in self.__dict__.items() if k != "result"}
        body["created_at"] = utc(self.created_at).isoformat()
        body["updated_at"] = utc(self.updated_at).isoformat()
        body["progress"] = round(self.progress, 4)
        body["result"] = self.result
        return body


class DryRunJobs:
    def __init__(self, engine: Engine, dry_runs: DryRuns) -> None:
        self.engine, self.dry_runs = engine, dry_runs
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dry-run")
        self._done: dict[str, threading.Event] = {}

    def submit(self, name: str, version: int, selection: Selection, baseline: int | None,
               top: int, max_error_rate: float | None, tenant: str | None,
               actor: str) -> DryRunJob:
        """Check the versions exist (404 now, not later in the job), store and queue the job."""
        draft, base = self.dry_runs.versions(name, version, baseline)
        now, job_id = utcnow(), str(uuid.uuid4())
        row = {"job_id": job_id, "contract_name": draft.name,
               "contract_version": draft.version,
               "baseline_version": base.version if base is not None else None,
               "selection": selection.to_json(), "top": top,
               "max_error_rate": max_error_rate, "tenant": tenant,
               "created_by": actor, "status": QUEUED, "done": 0, "total": 0, "result": None,
               "error": None, "created_at": now, "updated_at": now}
        with self.engine.begin() as conn:
            conn.execute(jobs_table.insert().values(**row))
        self._done[job_id] = threading.Event()
        self._executor.submit(self._run, job_id)
        return _job(row)

    def wait(self, job_id: str, timeout: float) -> DryRunJob:
        """The job once it finished, or as it stands after ``timeout`` seconds."""
        done = self._done.get(job_id)
        if done is not None:
            done.wait(timeout)
        return self.get(job_id)

    def get(self, job_id: str, tenant: str | None = None) -> DryRunJob:
        """The job; a tenant sees only its own (others are not found)."""
        query = select(jobs_table).where(jobs_table.c.job_id == job_id)
        if tenant is not None:
            query = query.where(jobs_table.c.tenant == tenant)
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        if row is None:
            raise DryRunJobNotFound(f"no dry run job '{job_id}'")
        job = _job(row._mapping)
        if not job.finished and job_id not in self._done and self._stale(job):
            self._finish(job_id, FAILED, error="abandoned: the process running it stopped")
            return self.get(job_id, tenant)
        return job

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _run(self, job_id: str) -> None:
        try:
            job = self.get(job_id)
            self._update(job_id, status=RUNNING)
            last = [0.0]

            def progress(done: int, total: int) -> None:
                now = utcnow().timestamp()
                if now - last[0] >= PROGRESS_EVERY_S or done == total:
                    last[0] = now
                    self._update(job_id, done=done, total=total)

            result = self.dry_runs.run(job.contract_name, job.contract_version,
                                       Selection(**job.selection), job.baseline_version, job.top,
                                       max_error_rate=job.max_error_rate, tenant=job.tenant,
                                       on_progress=progress)
            self._finish(job_id, SUCCEEDED, result=result.to_json(), done=result.subjects)
        except Exception as exc:  # the job says what went wrong; the thread lives on
            log.exception("dry run job %s failed", job_id)
            self._finish(job_id, FAILED, error=f"{type(exc).__name__}: {exc}"[:1000])
        finally:
            done = self._done.pop(job_id, None)
            if done is not None:
                done.set()

    def _finish(self, job_id: str, status: str, **values: Any) -> None:
        self._update(job_id, status=status, **values)

    def _update(self, job_id: str, **values: Any) -> None:
        with self.engine.begin() as conn:
            conn.execute(update(jobs_table).where(jobs_table.c.job_id == job_id)
                         .values(**values, updated_at=utcnow()))

    @staticmethod
    def _stale(job: DryRunJob) -> bool:
        return utcnow() - utc(job.updated_at) > timedelta(seconds=STALE_S)


def _job(row: Any) -> DryRunJob:
    return DryRunJob(**{k: row[k] for k in DryRunJob.__dataclass_fields__})
