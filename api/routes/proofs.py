"""Signed checkpoints and the proofs served from them (RFC 9162 shapes): what an auditor
fetches here and checks offline with `hcp audit prove` and the log's public key."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query
from pydantic import BaseModel, Field

from api.deps import AuditRead, AuditWrite, CheckpointStoreDep, ContainerDep, ProofsDep, SignerDep

router = APIRouter(prefix="/v1/audit", tags=["audit"])


class CheckpointOut(BaseModel):
    position: int = Field(description="Its place among the checkpoints (not in the log)")
    origin: str = Field(description="The log's name, also the signing key's")
    tree_size: int = Field(description="Events covered: positions 1..tree_size")
    root: str = Field(description="RFC 9162 Merkle root of their chain hashes (base64)")
    chain_head: str = Field(description="The chain hash of event tree_size")
    time: str
    key_id: str
    note: str = Field(description="The signed note itself (C2SP tlog-checkpoint): keep this")


class InclusionOut(BaseModel):
    event_id: str
    position: int
    checkpoint_position: int
    event_hash: str
    leaf_index: int = Field(description="position - 1")
    checkpoint: str = Field(description="The signed note the proof leads to")
    proof: list[str] = Field(description="The audit path, base64 hashes, leaf to root")


class ConsistencyOut(BaseModel):
    old_checkpoint: str
    new_checkpoint: str
    proof: list[str]


class KeyOut(BaseModel):
    vkey: str = Field(description="name+keyid+base64 verifier key (what `hcp audit prove --key` takes)")
    name: str
    key_id: str
    public_pem: str


@router.get("/checkpoints", response_model=list[CheckpointOut])
def list_checkpoints(checkpoints: CheckpointStoreDep, _: AuditRead, after: Annotated[int, Query(ge=0)] = 0,
                     limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> list[dict[str, Any]]:
    """Signed checkpoints after ``after``, oldest first."""
    return [c.to_json() for c in checkpoints.page(after, limit)]


@router.get("/checkpoints/latest", response_model=CheckpointOut)
def latest_checkpoint(checkpoints: CheckpointStoreDep, _: AuditRead) -> dict[str, Any]:
    """The newest signed checkpoint."""
    latest = checkpoints.latest()
    if latest is None:
        raise HTTPException(404, "no checkpoint has been signed yet")
    return latest.to_json()


@router.post("/checkpoints", response_model=CheckpointOut, status_code=201)
def create_checkpoint(signer: SignerDep, _: AuditWrite) -> dict[str, Any]:
    """Seal the reward chain, build the tree to the log's head and sign a checkpoint now."""
    signed = signer.sign()
    assert signed is not None
    return signed.to_json()


@router.get("/proof/{event_id}", response_model=InclusionOut)
def inclusion_proof(event_id: uuid.UUID, proofs: ProofsDep, _: AuditRead,
                    checkpoint: Annotated[int | None, Query(ge=1, description="Default: latest")] = None,
                    ) -> dict[str, Any]:
    """The event's inclusion proof in a signed checkpoint (409 if it is newer than it)."""
    answer = proofs.inclusion(event_id, checkpoint)
    return {"event_id": answer.event_id, "position": answer.position,
            "checkpoint_position": answer.checkpoint_position, **answer.bundle.to_json()}


@router.get("/consistency", response_model=ConsistencyOut)
def consistency_proof(proofs: ProofsDep, _: AuditRead, old: Annotated[int, Query(ge=1)],
                      new: Annotated[int | None, Query(ge=1, description="Default: latest")] = None,
                      ) -> dict[str, Any]:
    """That checkpoint ``old``'s log is a prefix of checkpoint ``new``'s."""
    return proofs.consistency(old, new).to_json()


@router.get("/key", response_model=KeyOut)
def verifier_key(container: ContainerDep, _: AuditRead) -> dict[str, Any]:
    """The log's public key. Pin it out of band too: a key fetched from the log it checks
    proves only that the answers agree with each other."""
    verifier = container.verifier
    if verifier is None:
        raise HTTPException(404, "this server has no checkpoint key (HCP_CHECKPOINT_KEY_FILE)")
    return {"vkey": verifier.vkey(), "name": verifier.name, "key_id": f"{verifier.key_id:08x}",
            "public_pem": verifier.public_pem().decode()}
