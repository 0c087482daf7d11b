"""An auditor that records each failed audit in the log (``audit.failed``): the audit's
report is the answer to whoever asked, the event tells everyone who watches the log."""

from __future__ import annotations

import logging

from audit.auditor import Auditor
from audit.checks.since import Base
from audit.events import AUDIT_FAILURES_STREAM, AuditFailed
from audit.keys import VerifierKey
from audit.report import AuditReport
from audit.sources import Progress
from events.model import EventMetadata
from events.projections.window import Window

log = logging.getLogger(__name__)

ACTOR = "system:audit"
FIRST = 5  # mismatch lines the event carries; the report has them all


class RecordingAuditor(Auditor):
    def adapter(self, adapter_id: str, verifier: VerifierKey | None = None,
                on_progress: Progress | None = None) -> AuditReport:
        return self._recorded(super().adapter(adapter_id, verifier, on_progress))

    def everything(self, verifier: VerifierKey | None = None,
                   on_progress: Progress | None = None) -> AuditReport:
        return self._recorded(super().everything(verifier, on_progress))

    def since(self, base: Base, window: Window, verifier: VerifierKey | None = None,
              on_progress: Progress | None = None) -> AuditReport:
        return self._recorded(super().since(base, window, verifier, on_progress))

    def _recorded(self, report: AuditReport) -> AuditReport:
        if report.ok:
            return report
        event = AuditFailed(scope=report.scope, mismatches=len(report.mismatches),
                            checks=[c.name for c in report.checks if not c.ok],
                            first=[m.line()[:500] for m in report.mismatches[:FIRST]])
        try:
            self.src.store.append([event.new_event(AUDIT_FAILURES_STREAM, EventMetadata(actor=ACTOR))])
        except Exception:  # a database that refuses writes still gets its report
            log.exception("could not record the failed audit in the log")
        return report
