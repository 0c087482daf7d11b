"""Dropping an API-set trigger policy, so the contract's is in force again."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from api.deps import PoliciesDep, TrainWrite
from api.jsonbody import StrictJsonRoute
from api.responses import SECURED, errors
from api.schemas.training import PolicyOut

router = APIRouter(prefix="/v1", tags=["training"], route_class=StrictJsonRoute, responses=SECURED)


@router.delete("/triggers/{specialist}", response_model=PolicyOut,
               response_model_exclude_unset=True, responses=errors(404, 409))
def clear_policy(specialist: str, policies: PoliciesDep, principal: TrainWrite,
                 reason: str = "") -> dict[str, Any]:
    """Drop the policy set through the API (a trigger.cleared event); answers with the
    policy now in force (the contract's, or none). 409 when none was set."""
    return {"specialist": specialist, **policies.clear(specialist, principal.actor, reason).to_json()}
