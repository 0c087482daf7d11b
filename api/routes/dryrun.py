"""Routes that score history under a contract version: dry runs and re-evaluation jobs."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException

from api.deps import ContractsDep, ContractsRead, ContractsWrite, DryRunsDep, ReevaluationsDep
from api.jsonbody import StrictJsonRoute
from api.params import VersionPath
from api.responses import BODY, SECURED, errors
from api.schemas.contracts import (
    DryRunIn,
    DryRunOut,
    ReevaluateIn,
    ReevaluationJobOut,
    ReevaluationJobsOut,
)
from evaluators.dryrun import Selection

router = APIRouter(prefix="/v1/contracts", tags=["contracts"], route_class=StrictJsonRoute,
                   responses=SECURED)


@router.post("/{name}/versions/{version}/dry-run", response_model=DryRunOut,
             responses={**BODY, **errors(404)})
def dry_run(name: str, version: VersionPath, dry_runs: DryRunsDep, _: ContractsRead,
            body: DryRunIn | None = None) -> dict[str, Any]:
    """Score a version over history and compare it with a baseline; writes nothing."""
    body = body or DryRunIn()
    last = body.last if body.last or body.from_position or body.to_position else 500
    try:
        selection = Selection(last, body.from_position, body.to_position)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    return dry_runs.run(name, version, selection, body.baseline, body.top,
                        body.max_error_rate).to_json()


@router.get("/{name}/versions/{version}/reevaluation", response_model=ReevaluationJobsOut,
            responses=errors(404))
def reevaluation(name: str, version: VersionPath, contracts: ContractsDep,
                 reevaluations: ReevaluationsDep, _: ContractsRead) -> dict[str, Any]:
    """Re-evaluation jobs of a version with their progress (done_position / to_position)."""
    contracts.get(name, version)  # 404 for an unknown version
    jobs = reevaluations.jobs(name, version)
    return {"contract": {"name": name, "version": version}, "jobs": [j.to_json() for j in jobs]}


@router.post("/{name}/versions/{version}/reevaluation", status_code=202,
             response_model=ReevaluationJobOut, responses={**BODY, **errors(404, 409)})
def start_reevaluation(name: str, version: VersionPath, reevaluations: ReevaluationsDep,
                       _: ContractsWrite, body: ReevaluateIn | None = None) -> dict[str, Any]:
    """Start (or find) a re-scoring of history from a position; evaluator workers run it."""
    body = body or ReevaluateIn()
    return reevaluations.start(name, version, body.from_position).to_json()
