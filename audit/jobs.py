"""Audits that take long (``audit all`` over a large log), run in a thread of the API
process: started by one request, followed by others (status, progress per check, then
the report). Kept in memory: an audit only reads, so one lost with a restart is simply
started again; the last ``keep`` are remembered.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from audit.report import AuditReport
from audit.sources import Progress
from kernel.clock import utcnow
from kernel.errors import NotFound

JobStatus = Literal["running", "succeeded", "failed"]


class AuditJobNotFound(NotFound):
    pass


@dataclass
class AuditJob:
    job_id: str
    scope: str
    started_at: datetime
    status: JobStatus = "running"
    progress: dict[str, list[int]] = field(default_factory=dict)  # check -> [done, total]
    report: AuditReport | None = None
    error: str | None = None

    def on_progress(self, check: str, done: int, total: int) -> None:
        self.progress[check] = [done, total]

    def to_json(self) -> dict[str, Any]:
        return {"job_id": self.job_id, "scope": self.scope, "status": self.status,
                "started_at": self.started_at.isoformat(), "progress": dict(self.progress),
                "error": self.error, "report": self.report.to_json() if self.report else None}


class AuditJobs:
    def __init__(self, keep: int = 20) -> None:
        self.keep = keep
        self._jobs: OrderedDict[str, AuditJob] = OrderedDict()
        self._lock = threading.Lock()

    def start(self, scope: str, work: Callable[[Progress], AuditReport]) -> AuditJob:
        job = AuditJob(str(uuid.uuid4()), scope, utcnow())
        with self._lock:
            self._jobs[job.job_id] = job
            while len(self._jobs) > self.keep:
                self._jobs.popitem(last=False)
        threading.Thread(target=self._run, args=(job, work), name=f"audit-{job.job_id[:8]}",
                         daemon=True).start()
        return job

    def get(self, job_id: str) -> AuditJob:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise AuditJobNotFound(f"no audit job {job_id} (jobs live in the API process's memory)")
        return job

    @staticmethod
    def _run(job: AuditJob, work: Callable[[Progress], AuditReport]) -> None:
        try:
            job.report = work(job.on_progress)
            job.status = "succeeded"
        except Exception as exc:  # reported in the job's status, not lost in a thread
            job.error, job.status = f"{type(exc).__name__}: {exc}", "failed"
