"""Routes of long-running jobs started elsewhere: a dry run's progress and its report."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from api.deps import DryRunJobsDep, DryRunRead

router = APIRouter(prefix="/v1/dry-runs", tags=["contracts"])


@router.get("/{job_id}")
def dry_run_job(job_id: str, jobs: DryRunJobsDep, principal: DryRunRead) -> dict[str, Any]:
    """A dry run's status (queued, running, succeeded, failed), progress (done / total
    subjects) and, once it succeeded, its report; a tenant sees only its own jobs."""
    return jobs.get(job_id, principal.tenant).to_json()
