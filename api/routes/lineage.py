"""Lineage routes (scope ``lineage:read``): upstream of a version, downstream of experience,
the state as of a time, dataset manifests, and the W3C PROV export of an ancestry."""

from __future__ import annotations

import re
import uuid
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field

from api.deps import AsOfDep, DownstreamDep, LineageRead, UpstreamDep
from api.jsonbody import StrictJsonRoute
from api.responses import SECURED, errors
from api.schemas.common import INT64_MAX, UtcDatetime
from audit.errors import invalid
from audit.exports.prov import prov_document
from audit.views import AsOfOut, DownstreamOut, ManifestOut, MembersPage, RecordsPage, UpstreamOut

router = APIRouter(prefix="/v1", tags=["lineage"], route_class=StrictJsonRoute, responses=SECURED)

Split = Literal["train", "held_out"]
Limit = Annotated[int, Query(ge=1, le=1000, description="Most items in the page")]
After = Annotated[int, Query(ge=0, le=INT64_MAX, description="Reward position the previous page ended at")]
CONTRACT_REF = re.compile(r"(?P<name>[^@]+)@(?P<version>[0-9]+)")


class ProvJsonOut(BaseModel):
    """A PROV-JSON document (https://www.w3.org/submissions/prov-json/)."""

    model_config = ConfigDict(extra="allow")
    prefix: dict[str, str]
    entity: dict[str, Any] = Field(default_factory=dict)
    activity: dict[str, Any] = Field(default_factory=dict)


@router.get("/lineage/adapters/{adapter_id}", response_model=UpstreamOut, responses=errors(404))
def upstream(adapter_id: str, lineage: UpstreamDep, _: LineageRead) -> UpstreamOut:
    """Every ancestor to the root: run, trigger, manifest, contract versions, base, gate."""
    return lineage.of(adapter_id)


@router.get("/lineage/adapters/{adapter_id}/records", response_model=RecordsPage, responses=errors(404))
def upstream_records(adapter_id: str, lineage: UpstreamDep, _: LineageRead, after: After = 0,
                     limit: Limit = 100, split: Split | None = None) -> RecordsPage:
    """The reward records and subject events the version was trained and gated on (paged)."""
    return lineage.records(adapter_id, after, limit, split)


@router.get("/lineage/adapters/{adapter_id}/prov", response_model=ProvJsonOut, responses=errors(404))
def upstream_prov(adapter_id: str, lineage: UpstreamDep, _: LineageRead) -> dict[str, Any]:
    """The ancestry as W3C PROV-JSON: versions, runs, manifests, contracts, base, agents."""
    return _as_json(prov_document(lineage.of(adapter_id)).serialize(format="json"))


@router.get("/manifests/{manifest_id}", response_model=ManifestOut, responses=errors(404))
def manifest(manifest_id: str, lineage: UpstreamDep, _: LineageRead) -> ManifestOut:
    """A frozen dataset manifest: hashes, cut, counts, contract versions, the versions it trained."""
    return lineage.manifest(manifest_id)


@router.get("/manifests/{manifest_id}/members", response_model=MembersPage, responses=errors(404))
def manifest_members(manifest_id: str, lineage: UpstreamDep, _: LineageRead, after: After = 0,
                     limit: Limit = 100, split: Split | None = None) -> MembersPage:
    """The rewards the manifest lists (subject, session, split), in reward position order."""
    return lineage.members(manifest_id, after, limit, split)


@router.get("/lineage/downstream", response_model=DownstreamOut, responses=errors(404))
def downstream(
    lineage: DownstreamDep, _: LineageRead,
    event_id: Annotated[str | None, Query(description="One event")] = None,
    stream_id: Annotated[str | None, Query(description="One session")] = None,
    tenant: Annotated[str | None, Query(description="Every session of a tenant")] = None,
    contract: Annotated[str | None, Query(description="A contract version, name@version")] = None,
    alias: Annotated[str | None, Query(description="Only windows of this alias")] = None,
    limit: Limit = 100, after: After = 0,
) -> DownstreamOut:
    """What the source reached: rewards, manifests, versions (descendants included), and when
    an alias served them. Give exactly one of event_id, stream_id, tenant, contract."""
    given = {k: v for k, v in {"event_id": event_id, "stream_id": stream_id, "tenant": tenant,
                               "contract": contract}.items() if v is not None}
    if len(given) != 1:
        raise invalid(f"give exactly one of event_id, stream_id, tenant, contract; got "
                      f"{sorted(given) or 'none'}", f"query.{sorted(given)[-1] if given else 'event_id'}")
    if event_id is not None:
        try:
            uuid.UUID(event_id)
        except ValueError:
            raise invalid(f"event_id '{event_id}' is not a UUID", "query.event_id") from None
        return lineage.of_event(event_id, alias, limit)
    if stream_id is not None:
        return lineage.of_stream(stream_id, alias, limit, after)
    if tenant is not None:
        return lineage.of_tenant(tenant, alias, limit, after)
    match = CONTRACT_REF.fullmatch(contract or "")
    if match is None:
        raise invalid(f"contract '{contract}' must be name@version", "query.contract")
    return lineage.of_contract_version(match["name"], int(match["version"]), alias, limit, after)


@router.get("/lineage/as-of", response_model=AsOfOut)
def as_of(at: Annotated[UtcDatetime, Query(description="ISO 8601; naive means UTC")],
          lineage: AsOfDep, _: LineageRead) -> AsOfOut:
    """Every alias's target and the active contract versions at time ``at``."""
    return lineage.at(at)


def _as_json(document: Any) -> dict[str, Any]:
    import json

    parsed: dict[str, Any] = json.loads(document) if isinstance(document, str) else document
    return parsed
