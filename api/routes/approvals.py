"""Protected aliases: protect one (admin), request a move, approve or reject it with
another key. Moving a protected alias any other way answers 409 (alias_protected)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from api.deps import Admin, ApprovalsDep, RegistryRead, RegistryWrite
from api.jsonbody import StrictJsonRoute
from api.responses import BODY, SECURED, errors
from api.schemas.registry import AliasMoveOut

router = APIRouter(prefix="/v1", tags=["registry"], route_class=StrictJsonRoute, responses=SECURED)


class ProtectionIn(BaseModel):
    protected: bool
    reason: str = Field(min_length=1, description="Recorded in the alias.protection_changed event")


class ProtectionOut(BaseModel):
    specialist: str
    alias: str
    protected: bool


class RequestIn(BaseModel):
    adapter_id: str | None = Field(None, description="Target version (ignored for a rollback)")
    rollback: bool = Field(False, description="Request a rollback instead of a move")
    reason: str = Field(min_length=1)


class DecisionIn(BaseModel):
    reason: str = ""


class MoveRequestOut(BaseModel):
    request_id: str
    specialist: str
    alias: str
    kind: str = Field(description="move | rollback")
    adapter_id: str | None
    expected_current: str | None = Field(description="Where the alias pointed when requested")
    requested_by: str
    reason: str
    requested_at: datetime
    status: str = Field(description="pending | approved | rejected")
    decided_by: str | None


@router.get("/specialists/{name}/aliases/{alias}/protection", response_model=ProtectionOut,
            responses=errors(404))
def protection(name: str, alias: str, approvals: ApprovalsDep, _: RegistryRead) -> dict[str, Any]:
    """Whether moving the alias needs a second key's approval."""
    return approvals.protection(name, alias)


@router.put("/specialists/{name}/aliases/{alias}/protection", response_model=ProtectionOut,
            responses={**BODY, **errors(404, 409)})
def protect(name: str, alias: str, body: ProtectionIn, approvals: ApprovalsDep,
            principal: Admin) -> dict[str, Any]:
    """Protect (or unprotect) an alias; an admin key only."""
    return approvals.protect(name, alias, body.protected, principal.actor, body.reason)


@router.post("/specialists/{name}/aliases/{alias}/requests", status_code=201,
             response_model=MoveRequestOut, responses={**BODY, **errors(404, 409)})
def request_move(name: str, alias: str, body: RequestIn, approvals: ApprovalsDep,
                 principal: RegistryWrite) -> dict[str, Any]:
    """Ask for a move (or rollback) of a protected alias; another key approves it."""
    return approvals.request(name, alias, body.adapter_id, principal.actor, body.reason,
                             body.rollback).to_json()


@router.get("/alias-requests", response_model=list[MoveRequestOut])
def pending(approvals: ApprovalsDep, _: RegistryRead,
            specialist: str | None = None) -> list[dict[str, Any]]:
    """Requests waiting for a decision, oldest first."""
    return [r.to_json() for r in approvals.pending(specialist)]


@router.post("/alias-requests/{request_id}/approve", response_model=AliasMoveOut,
             responses={**BODY, **errors(404, 409)})
def approve(request_id: str, body: DecisionIn, approvals: ApprovalsDep,
            principal: RegistryWrite) -> dict[str, Any]:
    """Approve with a key other than the requester's: the alias moves (events)."""
    return approvals.approve(request_id, principal.actor, body.reason).to_json()


@router.post("/alias-requests/{request_id}/reject", response_model=MoveRequestOut,
             responses={**BODY, **errors(404, 409)})
def reject(request_id: str, body: DecisionIn, approvals: ApprovalsDep,
           principal: RegistryWrite) -> dict[str, Any]:
    """Turn a request down; the alias stays."""
    return approvals.reject(request_id, principal.actor, body.reason).to_json()
