"""Audit: the hash chain's status, signed checkpoints, and the audit runs the log keeps.

Re-checking the chain reads every event (seconds to minutes on a large log), so it never
runs inside a page request: a person starts it, it runs in a thread of this process, and
the page polls its progress; the last result stays until the next check replaces it.
An ``audit all`` started here runs the same way (``audit.jobs``) and is stored when it
ends, as every run is (``audit.runs``), whoever started it and from where.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from audit.jobs import AuditJob
from audit.report import AuditReport
from audit.runs import AuditRun
from audit.sources import Progress
from events.chain import VerifyReport, verify_chain
from events.model import RecordedEvent
from events.store import EventStore
from hcp.bootstrap import Container
from kernel.clock import utcnow
from kernel.errors import NotFound


@dataclass
class ChainCheck:
    """One verification of the whole chain, as far as it has got."""

    head: int  # the log's last position when the check started
    started_at: datetime = field(default_factory=utcnow)
    checked: int = 0
    finished_at: datetime | None = None
    report: VerifyReport | None = None
    error: str | None = None

    @property
    def running(self) -> bool:
        return self.finished_at is None

    @property
    def percent(self) -> float:
        return 100.0 if not self.head else round(100 * min(1.0, self.checked / self.head), 1)


class ChainChecks:
    """At most one chain verification at a time per process; the latest one is kept."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.latest: ChainCheck | None = None

    def start(self, store: EventStore) -> ChainCheck:
        """Start a check unless one is running; either way return the current one."""
        with self._lock:
            if self.latest is not None and self.latest.running:
                return self.latest
            check = self.latest = ChainCheck(head=store.head())
        threading.Thread(target=self._run, args=(store, check), name="console-chain-check",
                         daemon=True).start()
        return check

    @staticmethod
    def _run(store: EventStore, check: ChainCheck) -> None:
        def counted(events: Iterator[RecordedEvent]) -> Iterator[RecordedEvent]:
            for event in events:
                check.checked += 1
                yield event

        try:
            check.report = verify_chain(counted(store.iter_all(raw=True)))
        except Exception as exc:  # shown on the page; a failed check must not pass as intact
            check.error = f"{type(exc).__name__}: {exc}"
        finally:
            check.finished_at = utcnow()


def audit_page(container: Container, checks: ChainChecks, before_run: int | None = None) -> dict[str, Any]:
    verifier = container.verifier
    return {"head": container.store.head(), "check": checks.latest,
            "checkpoints": checkpoints(container), "runs": audit_runs(container, before_run),
            "vkey": verifier.vkey() if verifier else None}


def checkpoints(container: Container, limit: int = 20) -> dict[str, Any]:
    """Signed checkpoints, newest first (the latest ``limit``)."""
    store = container.checkpoint_store
    newest = store.latest()
    if newest is None:
        return {"available": True, "rows": [], "newest": None}
    rows = []
    for stored in reversed(store.page(max(0, newest.position - limit), limit)):
        checkpoint = stored.checkpoint
        rows.append({"position": stored.position, "size": checkpoint.size,
                     "timestamp": checkpoint.timestamp, "chain_head": checkpoint.chain_head,
                     "origin": checkpoint.origin, "key_id": stored.key_id})
    return {"available": True, "rows": rows, "newest": newest.position}


RUNS_PAGE = 20


def audit_runs(container: Container, before: int | None = None) -> dict[str, Any]:
    """The stored audit runs (``audit.completed``), newest first, a page."""
    runs = container.audit_runs.latest(before, RUNS_PAGE + 1)
    return {"rows": runs[:RUNS_PAGE],
            "older": runs[RUNS_PAGE - 1].position if len(runs) > RUNS_PAGE else None}


@dataclass
class ConsoleAudit:
    """An ``audit all`` started from the console: its job, then the run it stored."""

    job: AuditJob | None = None
    stored: AuditRun | None = None

    @property
    def progress(self) -> list[dict[str, Any]]:
        rows = (self.job.progress if self.job else {}).items()
        return [{"check": name, "done": done, "total": total,
                 "percent": 100.0 if not total else round(100 * min(1.0, done / total), 1)}
                for name, (done, total) in rows]


class ConsoleAudits:
    """At most one console-started audit at a time per process; the latest few are kept
    by job id (the page polls one)."""

    def __init__(self, keep: int = 20) -> None:
        self._lock, self.keep = threading.Lock(), keep
        self._audits: dict[str, ConsoleAudit] = {}

    def start(self, container: Container, actor: str) -> ConsoleAudit:
        with self._lock:
            running = [a for a in self._audits.values() if a.job and a.job.status == "running"]
            if running:
                return running[0]
            audit = ConsoleAudit()

            def work(progress: Progress) -> AuditReport:
                report, audit.stored = container.audit_runs.everything(actor, "console", on_progress=progress)
                return report

            audit.job = container.audit_jobs.start("all", work)
            self._audits[audit.job.job_id] = audit
            while len(self._audits) > self.keep:
                self._audits.pop(next(iter(self._audits)))
            return audit

    def get(self, job_id: str) -> ConsoleAudit:
        with self._lock:
            found = self._audits.get(job_id)
        if found is None:
            raise NotFound(f"no audit {job_id} started from this console process (it may have "
                           "restarted: the stored runs are listed on the audit page)")
        return found
