"""Routes of long-running jobs started elsewhere: a dry run's progress and its report."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from api.deps import DryRunJobsDep, DryRunRead
from api.jsonbody import StrictJsonRoute
from api.responses import SECURED, errors
from api.schemas.contracts import DryRunJobOut

router = APIRouter(prefix="/v1/dry-runs", tags=["contracts"], route_class=StrictJsonRoute,
                   responses=SECURED)


@router.get("/{job_id}", response_model=DryRunJobOut, responses=errors(404))
def dry_run_job(job_id: str, jobs: DryRunJobsDep, principal: DryRunRead) -> dict[str, Any]:
    """A dry run's status (queued, running, succeeded, failed), progress (done / total
    subjects) and, once it succeeded, its report; a tenant sees only its own jobs."""
    return jobs.get(job_id, principal.tenant).to_json()
