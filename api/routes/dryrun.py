"""Routes that score history under a contract version: dry runs and re-evaluation jobs."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException
from fastapi.responses import JSONResponse

from api.deps import (
    ContractsDep,
    ContractsRead,
    ContractsWrite,
    DryRunJobsDep,
    DryRunRead,
    ReevaluationsDep,
    SettingsDep,
)
from api.jsonbody import StrictJsonRoute
from api.params import VersionPath
from api.responses import BODY, SECURED, errors
from api.schemas.contracts import (
    DryRunAcceptedOut,
    DryRunIn,
    DryRunOut,
    ReevaluateIn,
    ReevaluationJobOut,
    ReevaluationJobsOut,
)
from api.visibility import job_json
from evaluators.dryrun import Selection

router = APIRouter(prefix="/v1/contracts", tags=["contracts"], route_class=StrictJsonRoute,
                   responses=SECURED)


ACCEPTED: dict[int | str, dict[str, Any]] = {202: {
    "model": DryRunAcceptedOut,
    "description": "Not done within HCP_DRY_RUN_WAIT_SECONDS: a job to poll at the Location header",
    "headers": {"Location": {"description": "/v1/dry-runs/{job_id}", "schema": {"type": "string"}}},
}}


@router.post("/{name}/versions/{version}/dry-run", response_model=DryRunOut,
             responses={**BODY, **errors(404), **ACCEPTED})
def dry_run(name: str, version: VersionPath, jobs: DryRunJobsDep, settings: SettingsDep,
            principal: DryRunRead, body: DryRunIn | None = None) -> Any:
    """Score a version over history (the key's tenant's subjects only) and compare it with
    a baseline; writes no reward. 200 with the report when it is done within
    HCP_DRY_RUN_WAIT_SECONDS, else 202 with a job to poll at ``/v1/dry-runs/{job_id}``."""
    body = body or DryRunIn()
    last = body.last if body.last or body.from_position or body.to_position else 500
    try:
        selection = Selection(last, body.from_position, body.to_position)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    job = jobs.submit(name, version, selection, body.baseline, body.top, body.max_error_rate,
                      principal.tenant, principal.actor)
    job = jobs.wait(job.job_id, settings.dry_run_wait_seconds)
    if job.status == "succeeded" and job.result is not None:
        return {**job.result, "job_id": job.job_id}
    if job.status == "failed":
        raise HTTPException(500, f"dry run failed: {job.error}")
    return JSONResponse({"job": job.to_json()}, status_code=202,
                        headers={"Location": f"/v1/dry-runs/{job.job_id}"})


@router.get("/{name}/versions/{version}/reevaluation", response_model=ReevaluationJobsOut,
            responses=errors(404))
def reevaluation(name: str, version: VersionPath, contracts: ContractsDep,
                 reevaluations: ReevaluationsDep, principal: ContractsRead) -> dict[str, Any]:
    """Re-evaluation jobs of a version with their progress (done_position / to_position).
    A job scores every tenant's history: its error's example quotes event text only to an
    operator key with events:read."""
    contracts.get(name, version)  # 404 for an unknown version
    jobs = reevaluations.jobs(name, version)
    return {"contract": {"name": name, "version": version},
            "jobs": [job_json(j, principal) for j in jobs]}


@router.post("/{name}/versions/{version}/reevaluation", status_code=202,
             response_model=ReevaluationJobOut, responses={**BODY, **errors(404, 409)})
def start_reevaluation(name: str, version: VersionPath, reevaluations: ReevaluationsDep,
                       principal: ContractsWrite, body: ReevaluateIn | None = None) -> dict[str, Any]:
    """Start (or find) a re-scoring of history from a position; evaluator workers run it."""
    body = body or ReevaluateIn()
    return job_json(reevaluations.start(name, version, body.from_position), principal)
