"""Routes of HCP contracts: versions, drafts, publishing, history, diff, dry-run."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query

from api.deps import ContractsDep, ContractsRead, ContractsWrite, PublisherDep
from api.jsonbody import StrictJsonRoute
from api.params import VersionPath
from api.responses import BODY, SECURED, errors
from api.schemas.common import INT32_MAX
from api.schemas.contracts import (
    ContractDiffOut,
    ContractStatus,
    ContractVersionOut,
    ContractVersionSummaryOut,
    DocumentIn,
    DraftIn,
    HistoryEntryOut,
    JsonSchemaOut,
    PublishedOut,
    PublishIn,
    RetireIn,
    ValidOut,
)
from api.visibility import errors_json
from contract.diff import diff_contracts
from contract.document import contract_json_schema, parse_contract

router = APIRouter(prefix="/v1/contracts", tags=["contracts"], route_class=StrictJsonRoute,
                   responses=SECURED)


@router.get("", response_model=list[ContractVersionSummaryOut])
def list_versions(contracts: ContractsDep, _: ContractsRead, name: str | None = None,
                  status: ContractStatus | None = None) -> list[dict[str, Any]]:
    """Every contract version (without documents), oldest first."""
    return [v.summary() for v in contracts.versions(name, status)]


@router.get("/schema", response_model=JsonSchemaOut)
def document_schema(_: ContractsRead) -> dict[str, Any]:
    """The JSON Schema of a contract document."""
    return contract_json_schema()


@router.post("/validate", response_model=ValidOut, responses=BODY)
def validate(body: DocumentIn, _: ContractsRead) -> dict[str, Any]:
    """Compile a document without storing it; 422 lists every problem."""
    parse_contract(body.document)
    return {"valid": True}


@router.post("/{name}/versions", status_code=201, response_model=ContractVersionOut,
             responses={**BODY, **errors(404, 409)})
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


@router.get("/{name}/versions/{version}", response_model=ContractVersionOut, responses=errors(404))
def get_version(name: str, version: VersionPath, contracts: ContractsDep,
                _: ContractsRead) -> dict[str, Any]:
    """One version with its document."""
    found = contracts.get(name, version)
    return {**found.summary(), "document": found.document}


@router.put("/{name}/versions/{version}", response_model=ContractVersionSummaryOut,
            responses={**BODY, **errors(404, 409)})
def edit_draft(name: str, version: VersionPath, body: DocumentIn, contracts: ContractsDep,
               principal: ContractsWrite) -> dict[str, Any]:
    """Replace a draft's document; a published version answers 409."""
    return contracts.edit_draft(name, version, body.document, principal.actor).summary()


@router.post("/{name}/versions/{version}/publish", response_model=PublishedOut,
             responses={**BODY, **errors(404, 409)})
def publish(name: str, version: VersionPath, publisher: PublisherDep, principal: ContractsWrite,
            body: PublishIn | None = None) -> dict[str, Any]:
    """Freeze a draft and make it score (history is then re-scored under it), after a dry
    run on recent history: 409 (publish_check_failed) when it errors above the threshold,
    unless forced with a reason."""
    body = body or PublishIn()
    published, check = publisher.publish(name, version, principal.actor, body.force, body.reason)
    shown = check.to_json() if check else None
    if shown is not None:  # the check's samples are a dry run's: event text needs events:read
        shown["samples"] = errors_json(shown["samples"], principal)
    return {**published.summary(), "check": shown}


@router.post("/{name}/versions/{version}/retire", response_model=ContractVersionSummaryOut,
             responses={**BODY, **errors(404, 409)})
def retire(name: str, version: VersionPath, body: RetireIn, contracts: ContractsDep,
           principal: ContractsWrite) -> dict[str, Any]:
    """Stop scoring new subjects under a published version; its rewards stay."""
    return contracts.retire(name, version, principal.actor, body.reason).summary()


@router.get("/{name}/history", response_model=list[HistoryEntryOut])
def history(name: str, contracts: ContractsDep, _: ContractsRead) -> list[dict[str, Any]]:
    """Every change to the contract: who, what, when (events of stream contract:<name>)."""
    return [
        {"position": e.position, "type": e.type, "version": e.payload.get("version"),
         "actor": e.metadata.actor, "at": e.recorded_at.isoformat(),
         "content_hash": e.payload.get("content_hash")}
        for e in contracts.history(name)
    ]


@router.get("/{name}/diff", response_model=ContractDiffOut, responses=errors(404))
def diff(name: str, a: Annotated[int, Query(ge=1, le=INT32_MAX)],
         b: Annotated[int, Query(ge=1, le=INT32_MAX)], contracts: ContractsDep,
         _: ContractsRead) -> dict[str, Any]:
    """A semantic diff of version ``a`` against version ``b``."""
    old, new = contracts.get(name, a), contracts.get(name, b)
    return diff_contracts(old.parsed(), new.parsed()).to_json()
