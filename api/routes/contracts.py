"""Routes of HCP contracts: versions, drafts, publishing, history, diff, dry-run."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, Field

from api.deps import ContractsDep, ContractsRead, ContractsWrite, PublisherDep
from contract.diff import diff_contracts
from contract.document import contract_json_schema, parse_contract

router = APIRouter(prefix="/v1/contracts", tags=["contracts"])


class DraftIn(BaseModel):
    document: str | None = Field(None, description="The TOML document; omit to copy the parent")
    parent_version: int | None = Field(None, ge=1, description="The version this draft edits")


class DocumentIn(BaseModel):
    document: str


class PublishIn(BaseModel):
    force: bool = Field(False, description="Publish although the dry run on recent history "
                        "errors above the threshold")
    reason: str = Field("", description="Why it is forced; required with force, recorded")


class RetireIn(BaseModel):
    reason: str = ""


@router.get("")
def list_versions(contracts: ContractsDep, _: ContractsRead, name: str | None = None,
                  status: str | None = None) -> list[dict[str, Any]]:
    """Every contract version (without documents), oldest first."""
    return [v.summary() for v in contracts.versions(name, status)]


@router.get("/schema")
def document_schema(_: ContractsRead) -> dict[str, Any]:
    """The JSON Schema of a contract document."""
    return contract_json_schema()


@router.post("/validate")
def validate(body: DocumentIn, _: ContractsRead) -> dict[str, Any]:
    """Compile a document without storing it; 422 lists every problem."""
    parse_contract(body.document)
    return {"valid": True}


@router.post("/{name}/versions", status_code=201)
def create_draft(name: str, body: DraftIn, contracts: ContractsDep,
                 principal: ContractsWrite) -> dict[str, Any]:
    """Start a new draft, from a document or from a parent version."""
    if body.document is None and body.parent_version is not None:
        draft = contracts.draft_from(name, body.parent_version, principal.actor)
    elif body.document is not None:
        draft = contracts.create_draft(name, body.document, principal.actor, body.parent_version)
    else:
        raise HTTPException(422, "give a document, a parent_version, or both")
    return {**draft.summary(), "document": draft.document}


@router.get("/{name}/versions/{version}")
def get_version(name: str, version: int, contracts: ContractsDep,
                _: ContractsRead) -> dict[str, Any]:
    """One version with its document."""
    found = contracts.get(name, version)
    return {**found.summary(), "document": found.document}


@router.put("/{name}/versions/{version}")
def edit_draft(name: str, version: int, body: DocumentIn, contracts: ContractsDep,
               principal: ContractsWrite) -> dict[str, Any]:
    """Replace a draft's document; a published version answers 409."""
    return contracts.edit_draft(name, version, body.document, principal.actor).summary()


@router.post("/{name}/versions/{version}/publish")
def publish(name: str, version: int, publisher: PublisherDep, principal: ContractsWrite,
            body: PublishIn | None = None) -> dict[str, Any]:
    """Freeze a draft and make it score (history is then re-scored under it), after a dry
    run on recent history: 409 when it errors above the threshold, unless forced."""
    body = body or PublishIn()
    published, check = publisher.publish(name, version, principal.actor, body.force, body.reason)
    return {**published.summary(), "check": check.to_json() if check else None}


@router.post("/{name}/versions/{version}/retire")
def retire(name: str, version: int, body: RetireIn, contracts: ContractsDep,
           principal: ContractsWrite) -> dict[str, Any]:
    """Stop scoring new subjects under a published version; its rewards stay."""
    return contracts.retire(name, version, principal.actor, body.reason).summary()


@router.get("/{name}/history")
def history(name: str, contracts: ContractsDep, _: ContractsRead) -> list[dict[str, Any]]:
    """Every change to the contract: who, what, when (events of stream contract:<name>)."""
    return [
        {"position": e.position, "type": e.type, "version": e.payload.get("version"),
         "actor": e.metadata.actor, "at": e.recorded_at.isoformat(),
         "content_hash": e.payload.get("content_hash")}
        for e in contracts.history(name)
    ]


@router.get("/{name}/diff")
def diff(name: str, a: int, b: int, contracts: ContractsDep, _: ContractsRead) -> dict[str, Any]:
    """A semantic diff of version ``a`` against version ``b``."""
    old, new = contracts.get(name, a), contracts.get(name, b)
    return diff_contracts(old.parsed(), new.parsed()).to_json()
