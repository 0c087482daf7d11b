"""The audit's own entry in the log: an audit that found something. Pure.

An audit only reads; a failed one is recorded (stream ``audit:failures``) so that whoever
watches the log (a webhook on ``audit.failed``) hears of it without reading reports.
"""

from __future__ import annotations

from pydantic import Field

from events.server_events import ServerEvent

AUDIT_FAILURES_STREAM = "audit:failures"


class AuditFailed(ServerEvent):
    TYPE = "audit.failed"
    SUMMARY = "An audit found mismatches between the log and what was derived from it"

    scope: str = Field(description="What was audited: all, or an adapter version")
    mismatches: int
    checks: list[str] = Field(description="The checks that failed")
    first: list[str] = Field(description="The first few mismatches, one line each")
