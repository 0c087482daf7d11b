"""Routes of serving contract versions: which version a harness runs per specialist, and
the harness configuration it polls (with an ETag, so an unchanged one costs a 304)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Response
from pydantic import BaseModel, Field

from api.deps import ContractsRead, ContractsWrite, ServingDep
from api.jsonbody import StrictJsonRoute
from api.responses import BODY, SECURED, errors
from api.schemas.common import UtcDatetime
from contract.harness_config import etag_matches
from contract.serving import ServingMove

router = APIRouter(prefix="/v1/contracts", tags=["serving"], route_class=StrictJsonRoute,
                   responses=SECURED)


class ServingMoveOut(BaseModel):
    position: int = Field(description="Position of the contract.serving_moved event")
    name: str
    specialist: str
    version: int | None = Field(description="Null: from this move on no version serves it")
    previous_version: int | None
    actor: str
    reason: str
    moved_at: datetime


class ServingOut(BaseModel):
    name: str
    at: datetime | None = Field(description="The time asked about; null: now")
    serving: dict[str, ServingMoveOut] = Field(description="Specialist -> the version it runs")
    scoring: list[int] = Field(description="Published versions, not retired (at ``at``): each "
                               "scores every new subject")


class ServeIn(BaseModel):
    version: int = Field(ge=1, le=2**31 - 1, description="A published version")
    specialist: str | None = Field(None, description="One slot; null: every slot it declares")
    reason: str = Field(min_length=1, description="Recorded in the contract.serving_moved event")


class ContractRefOut(BaseModel):
    name: str
    version: int
    content_hash: str


class AdapterOut(BaseModel):
    alias: str
    adapter_id: str | None = Field(description="Where the alias points now; null: nowhere yet")


class TextOut(BaseModel):
    digest: str
    text: str | None = Field(description="Null when the contract stores only the digest")


class HarnessConfigOut(BaseModel):
    contract: ContractRefOut
    specialist: str
    base_model: str
    base_model_digest: str | None
    adapter_alias: str
    adapter: AdapterOut
    slot: dict[str, Any] = Field(description="description, keywords, priority")
    router: dict[str, Any]
    tools: list[str] = Field(description="Tools this specialist may call")
    hooks: list[dict[str, Any]]
    prompts: dict[str, TextOut]
    skills: dict[str, TextOut]
    config_hash: str = Field(description="sha256 of this body without it; also the ETag")


def _out(move: ServingMove) -> ServingMoveOut:
    return ServingMoveOut(**move.to_json())


@router.get("/{name}/serving", response_model=ServingOut)
def serving(name: str, serving: ServingDep, _: ContractsRead,
            at: UtcDatetime | None = None) -> ServingOut:
    """Which version serves each specialist (now, or at ``at``), and which versions score."""
    state = serving.state(name, at)
    return ServingOut(name=name, at=at, serving={s: _out(m) for s, m in state.serving.items()},
                      scoring=state.scoring)


@router.put("/{name}/serving", response_model=list[ServingMoveOut],
            responses={**BODY, **errors(404, 409)})
def serve(name: str, body: ServeIn, serving: ServingDep,
          principal: ContractsWrite) -> list[ServingMoveOut]:
    """Make a published version serve one specialist, or all it declares (events)."""
    moves = serving.move(name, body.specialist, body.version, principal.actor, body.reason)
    return [_out(m) for m in moves]


@router.get("/{name}/serving/{specialist}", response_model=ServingMoveOut, responses=errors(404))
def serving_of(name: str, specialist: str, serving: ServingDep, _: ContractsRead,
               at: UtcDatetime | None = None) -> ServingMoveOut:
    """The version that serves ``specialist`` (now, or at ``at``); 404 if none did."""
    return _out(serving.at(name, specialist, at))


@router.get("/{name}/serving/{specialist}/history", response_model=list[ServingMoveOut])
def serving_history(name: str, specialist: str, serving: ServingDep, _: ContractsRead,
                    limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> list[ServingMoveOut]:
    """The specialist's serving moves, newest first: who, when, from which version, why."""
    return [_out(m) for m in serving.history(name, specialist, limit)]


@router.get("/{name}/serving/{specialist}/harness", response_model=HarnessConfigOut,
            responses={304: {"description": "Unchanged since the ETag sent in If-None-Match"},
                       **errors(404)})
def harness(name: str, specialist: str, serving: ServingDep, _: ContractsRead, response: Response,
            at: UtcDatetime | None = None,
            if_none_match: Annotated[str | None, Header()] = None) -> Any:
    """The harness configuration to run for ``specialist`` now: the serving version's
    [harness] resolved for the slot, with its version and hash. Poll with If-None-Match."""
    body = serving.harness(name, specialist, at)
    etag = f'"{body["config_hash"]}"'
    if etag_matches(if_none_match, body["config_hash"]):
        return Response(status_code=304, headers={"ETag": etag})
    response.headers["ETag"] = etag
    return HarnessConfigOut(**body)
