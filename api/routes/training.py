"""Routes of training: runs and their progress, trigger policies, firings, manual triggers.

Mounted through ``api.routes.registry.router`` (under /v1); the registry's errors become
HTTP statuses in ``api/errors.py``, like every other domain error.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from api.deps import PoliciesDep, RegistryDep, RegistryRead, RunsDep, TrainWrite, TriggersDep
from api.jsonbody import StrictJsonRoute
from api.responses import BODY, errors
from api.schemas.training import (
    FiredOut,
    FireIn,
    FiringOut,
    PolicyOut,
    PolicyStateOut,
    RetryIn,
    StartIn,
    TrainingRunOut,
    TriggerCheckOut,
)
from api.visibility import run_json
from contract.policy import TriggerPolicy
from trainer.runs.model import RunStatus
from trainer.runs.store import Runs
from trainer.triggers.firing import Triggers

# No prefix: api.routes.registry includes this router under its /v1 prefix (and its
# documented error responses).
router = APIRouter(tags=["training"], route_class=StrictJsonRoute)
Limit = Annotated[int, Query(ge=1, le=1000)]
ALREADY_FIRED: dict[int | str, dict[str, Any]] = {
    200: {"model": FiredOut, "description": "This work was fired before: its run"}}


def _fire(triggers: Triggers, runs: Runs, specialist: str, body: FireIn, actor: str,
          response: Response) -> dict[str, Any]:
    reason = body.reason or ("" if body.force else f"manual trigger by {actor}")
    firing = triggers.fire_manual(specialist, actor, reason, body.parent, body.base_model,
                                  body.force, body.hyper)
    if not firing.created:
        response.status_code = 200
    return {"firing": firing.to_json(), "run": runs.get(firing.run_id).to_json()}


@router.get("/training-runs", response_model=list[TrainingRunOut])
def list_runs(runs: RunsDep, principal: RegistryRead, specialist: str | None = None,
              status: RunStatus | None = None, limit: Limit = 50) -> list[dict[str, Any]]:
    """Training runs, newest first, with status, step/total and last loss."""
    return [run_json(r, principal) for r in runs.recent(specialist, status, limit)]


@router.post("/training-runs", status_code=201, response_model=FiredOut,
             responses={**ALREADY_FIRED, **BODY, **errors(404, 409)})
def start_run(body: StartIn, triggers: TriggersDep, runs: RunsDep, principal: TrainWrite,
              response: Response) -> dict[str, Any]:
    """Manual trigger: 201 with a new run, 200 with the run that already does this work."""
    return _fire(triggers, runs, body.specialist, body, principal.actor, response)


@router.get("/training-runs/{run_id}", response_model=TrainingRunOut, responses=errors(404))
def get_run(run_id: str, runs: RunsDep, principal: RegistryRead) -> dict[str, Any]:
    """One run: queued, running (step, total_steps, last_loss), succeeded or failed (error,
    to operator keys)."""
    return run_json(runs.get(run_id), principal)


@router.post("/training-runs/{run_id}/retry", response_model=TrainingRunOut,
             responses={**BODY, **errors(404, 409)})
def retry_run(run_id: str, body: RetryIn, runs: RunsDep, triggers: TriggersDep,
              principal: TrainWrite) -> dict[str, Any]:
    """Queue a failed run again (the same run: the same work key, manifest and parent)."""
    run = runs.requeue(run_id, principal.actor, body.reason)
    triggers.send(run_id)  # an unreachable broker leaves it queued; a worker re-sends it
    return run_json(run, principal)


@router.get("/triggers", response_model=list[PolicyOut], response_model_exclude_unset=True)
def list_policies(policies: PoliciesDep, registry: RegistryDep,
                  _: RegistryRead) -> list[dict[str, Any]]:
    """Each specialist's effective trigger policy and where it comes from."""
    return [{"specialist": s.name, **policies.effective(s.name).to_json()}
            for s in registry.specialists()]


@router.post("/triggers/evaluate", response_model=list[TriggerCheckOut])
def evaluate(triggers: TriggersDep, principal: TrainWrite) -> list[dict[str, Any]]:
    """Evaluate every policy once; what fired is queued (exactly once per work key)."""
    return [e.to_json() for e in triggers.evaluate(principal.actor)]


@router.get("/triggers/firings", response_model=list[FiringOut])
def firings(triggers: TriggersDep, _: RegistryRead, specialist: str | None = None,
            limit: Limit = 50) -> list[dict[str, Any]]:
    """Trigger firings, newest first: policy, reason, parent, dataset cut and run."""
    return [f.to_json() for f in triggers.firings(specialist, limit)]


@router.get("/triggers/{specialist}", response_model=PolicyStateOut, response_model_exclude_unset=True,
            responses=errors(404))
def get_policy(specialist: str, triggers: TriggersDep, policies: PoliciesDep,
               _: RegistryRead) -> dict[str, Any]:
    """The effective policy and the state it is evaluated against right now."""
    state = triggers.state(specialist)
    return {"specialist": specialist, **policies.effective(specialist).to_json(),
            "state": {**state.__dict__, "now": state.now.isoformat(),
                      "last_fired_at": state.last_fired_at.isoformat() if state.last_fired_at else None,
                      "rejected_at": state.rejected_at.isoformat() if state.rejected_at else None}}


@router.put("/triggers/{specialist}", response_model=PolicyOut, response_model_exclude_unset=True,
            responses={**BODY, **errors(404)})
def configure(specialist: str, body: TriggerPolicy, policies: PoliciesDep,
              principal: TrainWrite) -> dict[str, Any]:
    """Set the specialist's trigger policy (overrides the contract's [training] section)."""
    return {"specialist": specialist, **policies.configure(specialist, body, principal.actor).to_json()}


@router.post("/triggers/{specialist}/fire", status_code=201, response_model=FiredOut,
             responses={**ALREADY_FIRED, **BODY, **errors(404, 409)})
def fire(specialist: str, body: FireIn, triggers: TriggersDep, runs: RunsDep,
         principal: TrainWrite, response: Response) -> dict[str, Any]:
    """Manual trigger (same as POST /v1/training-runs)."""
    return _fire(triggers, runs, specialist, body, principal.actor, response)
