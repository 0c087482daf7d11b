"""Dropping an API-set trigger policy, so the contract's is in force again."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from api.deps import PoliciesDep, TrainWrite

router = APIRouter(prefix="/v1", tags=["training"])


class EffectivePolicyOut(BaseModel):
    specialist: str
    source: str = Field(description="'contract:<name>@<version>', or 'none' (manual only)")
    policy: dict[str, Any]
    resolved: dict[str, Any]


@router.delete("/triggers/{specialist}", response_model=EffectivePolicyOut)
def clear_policy(specialist: str, policies: PoliciesDep, principal: TrainWrite,
                 reason: str = "") -> dict[str, Any]:
    """Drop the policy set through the API (a trigger.cleared event); answers with the
    policy now in force. 409 when none was set."""
    return {"specialist": specialist, **policies.clear(specialist, principal.actor, reason).to_json()}
