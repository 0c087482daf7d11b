"""Signed checkpoints and the proofs served from them (RFC 9162 shapes): what an auditor
fetches here and checks offline with `hcp audit prove` and the log's public key."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query

from api.deps import AuditRead, AuditWrite, CheckpointStoreDep, ContainerDep, ProofsDep, SignerDep
from api.jsonbody import StrictJsonRoute
from api.responses import SECURED, errors
from api.schemas.audit import CheckpointOut, ConsistencyOut, InclusionOut, KeyOut
from api.schemas.common import INT64_MAX

router = APIRouter(prefix="/v1/audit", tags=["audit"], route_class=StrictJsonRoute, responses=SECURED)
CheckpointPosition = Annotated[int | None, Query(ge=1, le=INT64_MAX, description="Default: the latest")]


@router.get("/checkpoints", response_model=list[CheckpointOut])
def list_checkpoints(checkpoints: CheckpointStoreDep, _: AuditRead,
                     after: Annotated[int, Query(ge=0, le=INT64_MAX)] = 0,
                     limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> list[dict[str, Any]]:
    """Signed checkpoints after ``after``, oldest first."""
    return [c.to_json() for c in checkpoints.page(after, limit)]


@router.get("/checkpoints/latest", response_model=CheckpointOut, responses=errors(404))
def latest_checkpoint(checkpoints: CheckpointStoreDep, _: AuditRead) -> dict[str, Any]:
    """The newest signed checkpoint."""
    latest = checkpoints.latest()
    if latest is None:
        raise HTTPException(404, "no checkpoint has been signed yet")
    return latest.to_json()


@router.post("/checkpoints", response_model=CheckpointOut, status_code=201, responses=errors(409))
def create_checkpoint(signer: SignerDep, _: AuditWrite) -> dict[str, Any]:
    """Seal the reward chain, build the tree to the log's head and sign a checkpoint now."""
    signed = signer.sign()
    assert signed is not None
    return signed.to_json()


@router.get("/proof/{event_id}", response_model=InclusionOut, responses=errors(404, 409))
def inclusion_proof(event_id: uuid.UUID, proofs: ProofsDep, _: AuditRead,
                    checkpoint: CheckpointPosition = None) -> dict[str, Any]:
    """The event's inclusion proof in a signed checkpoint (409 if it is newer than it)."""
    answer = proofs.inclusion(event_id, checkpoint)
    return {"event_id": answer.event_id, "position": answer.position,
            "checkpoint_position": answer.checkpoint_position, **answer.bundle.to_json()}


@router.get("/consistency", response_model=ConsistencyOut, responses=errors(404, 409))
def consistency_proof(proofs: ProofsDep, _: AuditRead,
                      old: Annotated[int, Query(ge=1, le=INT64_MAX, description="The older checkpoint")],
                      new: CheckpointPosition = None) -> dict[str, Any]:
    """That checkpoint ``old``'s log is a prefix of checkpoint ``new``'s."""
    return proofs.consistency(old, new).to_json()


@router.get("/key", response_model=KeyOut, responses=errors(404))
def verifier_key(container: ContainerDep, _: AuditRead) -> dict[str, Any]:
    """The log's public key. Pin it out of band too: a key fetched from the log it checks
    proves only that the answers agree with each other."""
    verifier = container.verifier
    if verifier is None:
        raise HTTPException(404, "this server has no checkpoint key (HCP_CHECKPOINT_KEY_FILE)")
    return {"vkey": verifier.vkey(), "name": verifier.name, "key_id": f"{verifier.key_id:08x}",
            "public_pem": verifier.public_pem().decode()}
