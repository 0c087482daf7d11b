"""Every audit that ran, kept in the log: who asked, when, what it checked, what it found.

An audit only reads, but its result is history an auditor points to ("the audit of 1 May
passed"), so each run, whether it passed or not, from ``hcp audit all``, the API or the
console, appends one ``audit.completed`` event on stream ``audit:runs``: the actor who
started it (the event's metadata), where from, the scope, the result, and the report
itself. The event is hash-chained like any other, so a stored report cannot be altered
or dropped without the chain saying so. Its mismatch lists are capped (a log with a
hundred thousand forged rows would otherwise make a hundred-megabyte event); the count is
exact, and ``report_sha256`` is the digest of the whole report, so a copy kept from
``hcp audit all --json`` can be matched with the run it came from.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from audit.auditor import Auditor
from audit.checks.since import Base
from audit.keys import VerifierKey
from audit.report import AuditReport
from audit.sources import Progress
from events.model import EventMetadata, RecordedEvent
from events.projections.window import Window
from events.server_events import Logged, ServerEvent, logged
from events.store import EventStore
from kernel.errors import NotFound

log = logging.getLogger(__name__)
AUDIT_RUNS_STREAM = "audit:runs"
MAX_MISMATCHES = 200  # kept in the event, over all checks; the count stays exact
StartedFrom = Literal["cli", "console", "api"]


class AuditCompleted(ServerEvent):
    TYPE = "audit.completed"
    SUMMARY = "An audit ran: who started it and where, what it checked, the result, the report"

    scope: str = Field(description="all, or adapter SPECIALIST@VERSION")
    ok: bool
    started_from: StartedFrom
    started_at: datetime
    finished_at: datetime | None
    mismatch_count: int
    mismatches_kept: int = Field(description="How many of them the report below lists")
    mismatches_per_check: dict[str, int] = Field(description="Each check's mismatches (all of them)")
    report_sha256: str = Field(description="sha256 of the whole report as canonical JSON "
                                           "(sorted keys, no spaces), every mismatch included")
    report: dict[str, Any] = Field(description="The report (audit.report.AuditReport.to_json), "
                                               "its mismatch lists capped (uncapped, it is the "
                                               "document report_sha256 digests)")


class AuditRunNotFound(NotFound):
    pass


@dataclass(frozen=True)
class AuditRun:
    """One stored run as the log holds it."""

    run: Logged[AuditCompleted]

    @property
    def event_id(self) -> str:
        return str(self.run.event_id)

    @property
    def actor(self) -> str:
        return self.run.actor

    @property
    def recorded_at(self) -> datetime:
        return self.run.recorded_at

    @property
    def position(self) -> int:
        return self.run.position

    @property
    def result(self) -> AuditCompleted:
        return self.run.event


def canonical_sha256(document: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(document, sort_keys=True, separators=(",", ":"),
                                     ensure_ascii=False).encode()).hexdigest()


def completed(report: AuditReport, started_from: StartedFrom) -> AuditCompleted:
    """The event of a finished audit: the report, mismatches kept up to MAX_MISMATCHES."""
    whole = report.to_json()
    kept, budget = [], MAX_MISMATCHES
    for check in whole["checks"]:
        shown = check["mismatches"][:budget]
        budget -= len(shown)
        kept.append({**check, "mismatches": shown})
    return AuditCompleted(
        scope=report.scope, ok=report.ok, started_from=started_from, started_at=report.started_at,
        finished_at=report.finished_at, mismatch_count=whole["mismatch_count"],
        mismatches_kept=MAX_MISMATCHES - budget,
        mismatches_per_check={c["check"]: len(c["mismatches"]) for c in whole["checks"]},
        report_sha256=canonical_sha256(whole),
        report={**whole, "checks": kept})


class AuditRuns:
    """Run audits and keep each run in the log; list and read the runs kept."""

    def __init__(self, store: EventStore, auditor: Callable[[], Auditor]) -> None:
        self.store, self._auditor = store, auditor  # the auditor is built on first use

    def everything(self, actor: str, started_from: StartedFrom, verifier: VerifierKey | None = None,
                   on_progress: Progress | None = None) -> tuple[AuditReport, AuditRun | None]:
        """``audit all``, stored."""
        report = self._auditor().everything(verifier, on_progress)
        return report, self.record(report, actor, started_from)

    def since(self, base: Base, window: Window, actor: str, started_from: StartedFrom,
              verifier: VerifierKey | None = None,
              on_progress: Progress | None = None) -> tuple[AuditReport, AuditRun | None]:
        """``audit all --since-checkpoint``, stored."""
        report = self._auditor().since(base, window, verifier, on_progress)
        return report, self.record(report, actor, started_from)

    def adapter(self, adapter_id: str, actor: str, started_from: StartedFrom,
                verifier: VerifierKey | None = None,
                on_progress: Progress | None = None) -> tuple[AuditReport, AuditRun | None]:
        """``audit adapter``, stored."""
        report = self._auditor().adapter(adapter_id, verifier, on_progress)
        return report, self.record(report, actor, started_from)

    def record(self, report: AuditReport, actor: str, started_from: StartedFrom) -> AuditRun | None:
        """The run appended to the log; None (logged) when the log refuses it: whoever
        asked still gets the report, a read-only database included."""
        event = completed(report, started_from)
        try:
            appended = self.store.append([event.new_event(AUDIT_RUNS_STREAM, EventMetadata(actor=actor))])
        except Exception:
            log.exception("could not keep the audit run in the log")
            return None
        return _run(appended[0].event)

    def latest(self, before: int | None = None, limit: int = 20) -> list[AuditRun]:
        """Stored runs newest first, recorded before log position ``before``."""
        upto = (before - 1) if before else self.store.head()
        found = self.store.closers((AuditCompleted.TYPE,), 0, upto, limit, newest_first=True)
        if not found:
            return []
        first, last = min(c.stream_seq for c in found), max(c.stream_seq for c in found)
        events = self.store.read_stream(AUDIT_RUNS_STREAM, first - 1, last - first + 1)
        wanted = {c.position for c in found}
        return [_run(e) for e in reversed(events) if e.position in wanted]

    def get(self, event_id: str) -> AuditRun:
        """Raises:
            AuditRunNotFound: no stored run with that id.
        """
        try:
            parsed = uuid.UUID(event_id)
        except ValueError:
            raise AuditRunNotFound(f"no audit run '{event_id}' (not an event id)") from None
        event = self.store.get_many([parsed]).get(str(parsed))
        if event is None or event.type != AuditCompleted.TYPE:
            raise AuditRunNotFound(f"no audit run '{event_id}'")
        return _run(event)


def _run(event: RecordedEvent) -> AuditRun:
    found = logged(event)
    assert isinstance(found.event, AuditCompleted)
    return AuditRun(found)  # type: ignore[arg-type]
