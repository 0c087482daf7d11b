"""Routes that score history under a contract version: dry runs and re-evaluation jobs."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Response
from pydantic import BaseModel, ConfigDict, Field

from api.deps import (
    ContractsDep,
    ContractsRead,
    ContractsWrite,
    DryRunJobsDep,
    DryRunRead,
    ReevaluationsDep,
    SettingsDep,
)
from evaluators.dryrun import MAX_SUBJECTS, Selection

router = APIRouter(prefix="/v1/contracts", tags=["contracts"])


class DryRunIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    baseline: int | None = Field(None, ge=1, description="Version to compare with; default: the "
                                 "draft's parent if published, else the latest published")
    last: int | None = Field(None, ge=1, le=MAX_SUBJECTS, description="The last N finished subjects")
    from_position: int | None = Field(None, ge=1, description="First position of a range")
    to_position: int | None = Field(None, ge=1, description="Last position of a range")
    top: int = Field(10, ge=0, le=100, description="How many of the largest movers to list")


class ReevaluateIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    from_position: int = Field(1, ge=1, description="First log position to re-score")


@router.post("/{name}/versions/{version}/dry-run")
def dry_run(name: str, version: int, jobs: DryRunJobsDep, settings: SettingsDep,
            principal: DryRunRead, response: Response,
            body: DryRunIn | None = None) -> dict[str, Any]:
    """Score a version over history (the key's tenant's subjects only) and compare it with
    a baseline; writes no reward. 200 with the report when it is done within
    HCP_DRY_RUN_WAIT_SECONDS, else 202 with a job to poll at ``/v1/dry-runs/{job_id}``."""
    body = body or DryRunIn()
    last = body.last if body.last or body.from_position or body.to_position else 500
    try:
        selection = Selection(last, body.from_position, body.to_position)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    job = jobs.submit(name, version, selection, body.baseline, body.top, principal.tenant,
                      principal.actor)
    job = jobs.wait(job.job_id, settings.dry_run_wait_seconds)
    if job.status == "succeeded" and job.result is not None:
        return {**job.result, "job_id": job.job_id}
    if job.status == "failed":
        raise HTTPException(500, f"dry run failed: {job.error}")
    response.status_code = 202
    response.headers["Location"] = f"/v1/dry-runs/{job.job_id}"
    return {"job": job.to_json()}


@router.get("/{name}/versions/{version}/reevaluation")
def reevaluation(name: str, version: int, contracts: ContractsDep, reevaluations: ReevaluationsDep,
                 _: ContractsRead) -> dict[str, Any]:
    """Re-evaluation jobs of a version with their progress (done_position / to_position)."""
    contracts.get(name, version)  # 404 for an unknown version
    jobs = reevaluations.jobs(name, version)
    return {"contract": {"name": name, "version": version}, "jobs": [j.to_json() for j in jobs]}


@router.post("/{name}/versions/{version}/reevaluation", status_code=202)
def start_reevaluation(name: str, version: int, reevaluations: ReevaluationsDep, _: ContractsWrite,
                       body: ReevaluateIn | None = None) -> dict[str, Any]:
    """Start (or find) a re-scoring of history from a position; evaluator workers run it."""
    body = body or ReevaluateIn()
    return reevaluations.start(name, version, body.from_position).to_json()
