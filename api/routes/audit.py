"""Audit routes: verify the hash chain, audits re-derived from the log (one adapter's
ancestry at once; everything as a job whose status and progress are followed), and the
event catalogue."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from api.deps import AuditJobsDep, AuditRead, ContainerDep, EventsRead, StoreDep
from api.jsonbody import StrictJsonRoute
from api.responses import BODY, SECURED, errors
from api.schemas.audit import AuditJobIn, AuditJobOut, AuditReportOut
from api.schemas.events import CatalogueEntryOut, VerifyOut
from audit.incremental import latest_base, new_seed
from events.catalogue import catalogue_document
from events.projections.window import Window
from kernel.errors import Invalid

router = APIRouter(prefix="/v1", tags=["audit"], route_class=StrictJsonRoute, responses=SECURED)


@router.get("/audit/verify", response_model=VerifyOut)
def verify_log(store: StoreDep, principal: AuditRead) -> VerifyOut:
    """Re-check every event's digest and chain hash; name the first broken position."""
    report = store.verify()
    brk = report.first_break
    return VerifyOut(intact=report.intact, checked=report.checked,
                     last_position=report.last_position,
                     first_break_position=brk.position if brk else None,
                     reason=brk.reason if brk else None)


@router.get("/audit/adapters/{adapter_id}", response_model=AuditReportOut, responses=errors(404))
def audit_adapter(adapter_id: str, container: ContainerDep, principal: AuditRead) -> dict[str, Any]:
    """Audit a version and its whole ancestry against the log (200 with ``ok`` false and
    every mismatch named when something was altered); the run is kept in the log."""
    report, _ = container.audit_runs.adapter(adapter_id, principal.actor, "api")
    return report.to_json()


@router.post("/audit/runs", response_model=AuditJobOut, status_code=202, responses=BODY)
def start_audit(body: AuditJobIn, container: ContainerDep, jobs: AuditJobsDep,
                principal: AuditRead) -> dict[str, Any]:
    """Start an audit in the background (``all`` takes long on a large log); follow it at
    GET /v1/audit/runs/{job_id}. The run is kept in the log when it ends."""
    runs, actor = container.audit_runs, principal.actor
    if body.scope == "adapter":
        adapter_id = str(body.adapter_id)
        job = jobs.start(f"adapter {adapter_id}", lambda progress: runs.adapter(
            adapter_id, actor, "api", on_progress=progress)[0])
    elif body.since_checkpoint:
        if container.verifier is None:
            raise Invalid("since_checkpoint starts from the checkpoint's signature: the server has no "
                          "checkpoint key (HCP_CHECKPOINT_KEY_FILE)")
        base = latest_base(container.checkpoint_store)  # 422 before a job starts when there is none
        window = Window(base.size, body.sample, body.seed or new_seed(), body.sample_manifests)
        job = jobs.start(f"all since {base.label()}", lambda progress: runs.since(
            base, window, actor, "api", on_progress=progress)[0])
    else:
        job = jobs.start("all", lambda progress: runs.everything(actor, "api", on_progress=progress)[0])
    return job.to_json()


@router.get("/audit/runs/{job_id}", response_model=AuditJobOut, responses=errors(404))
def audit_status(job_id: str, jobs: AuditJobsDep, _: AuditRead) -> dict[str, Any]:
    """An audit job: its status, progress per check, and the report once it is done."""
    return jobs.get(job_id).to_json()


@router.get("/catalogue", response_model=list[CatalogueEntryOut])
def event_catalogue(principal: EventsRead) -> list[dict[str, Any]]:
    """The known event types with the JSON Schema of each payload version."""
    return catalogue_document()
