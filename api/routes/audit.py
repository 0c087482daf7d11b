"""Audit routes: verify the hash chain, and audits re-derived from the log (one adapter's
ancestry at once; everything as a job whose status and progress are followed)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field, model_validator

from api.deps import AuditJobsDep, AuditorDep, AuditRead, EventsRead, StoreDep
from api.schemas import VerifyOut
from events.catalogue import catalogue_document

router = APIRouter(prefix="/v1", tags=["audit"])


class MismatchOut(BaseModel):
    check: str
    subject: str = Field(description="The row or event, named: 'coding@2', 'event 57', 'reward <id>'")
    message: str


class CheckOut(BaseModel):
    check: str
    table: str = Field(description="The rows checked")
    against: str = Field(description="What they are checked against")
    ok: bool
    checked: int
    mismatches: list[MismatchOut]
    notes: list[str]
    seconds: float


class AuditReportOut(BaseModel):
    scope: str
    ok: bool
    started_at: str
    finished_at: str | None
    mismatch_count: int
    checks: list[CheckOut]


class AuditJobIn(BaseModel):
    scope: str = Field("all", pattern="^(all|adapter)$", description="'all', or 'adapter' with adapter_id")
    adapter_id: str | None = Field(None, description="SPECIALIST@VERSION, for scope 'adapter'")

    @model_validator(mode="after")
    def _adapter_needs_id(self) -> AuditJobIn:
        if self.scope == "adapter" and not self.adapter_id:
            raise ValueError("adapter_id is required when scope is 'adapter'")
        return self


class AuditJobOut(BaseModel):
    job_id: str
    scope: str
    status: str = Field(description="running | succeeded | failed")
    started_at: str
    progress: dict[str, list[int]] = Field(description="check -> [done, total]")
    error: str | None
    report: AuditReportOut | None


@router.get("/audit/verify", response_model=VerifyOut)
def verify_log(store: StoreDep, principal: AuditRead) -> VerifyOut:
    """Re-check every event's digest and chain hash; name the first broken position."""
    report = store.verify()
    brk = report.first_break
    return VerifyOut(intact=report.intact, checked=report.checked,
                     last_position=report.last_position,
                     first_break_position=brk.position if brk else None,
                     reason=brk.reason if brk else None)


@router.get("/audit/adapters/{adapter_id}", response_model=AuditReportOut)
def audit_adapter(adapter_id: str, auditor: AuditorDep, _: AuditRead) -> dict[str, Any]:
    """Audit a version and its whole ancestry against the log (200 with ``ok`` false and
    every mismatch named when something was altered)."""
    return auditor.adapter(adapter_id).to_json()


@router.post("/audit/runs", response_model=AuditJobOut, status_code=202)
def start_audit(body: AuditJobIn, auditor: AuditorDep, jobs: AuditJobsDep, _: AuditRead) -> dict[str, Any]:
    """Start an audit in the background (``all`` takes long on a large log); follow it at
    GET /v1/audit/runs/{job_id}."""
    if body.scope == "adapter":
        adapter_id = str(body.adapter_id)
        job = jobs.start(f"adapter {adapter_id}",
                         lambda progress: auditor.adapter(adapter_id, on_progress=progress))
    else:
        job = jobs.start("all", lambda progress: auditor.everything(on_progress=progress))
    return job.to_json()


@router.get("/audit/runs/{job_id}", response_model=AuditJobOut)
def audit_status(job_id: str, jobs: AuditJobsDep, _: AuditRead) -> dict[str, Any]:
    """An audit job: its status, progress per check, and the report once it is done."""
    return jobs.get(job_id).to_json()


@router.get("/catalogue")
def event_catalogue(principal: EventsRead) -> list[dict]:
    """The known event types with the JSON Schema of each payload version."""
    return catalogue_document()
