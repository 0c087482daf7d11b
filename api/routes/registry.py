"""Routes of the adapter registry: base models, specialists, adapter versions, aliases.

``router`` also carries the training routes (``api.routes.training``), so the registry
and training API are mounted as one entry of ``api.routes.ROUTERS``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query

from api.deps import AliasesDep, LineageDep, RegistryDep, RegistryRead, RegistryWrite, ResolverDep
from api.jsonbody import StrictJsonRoute
from api.responses import BODY, SECURED, errors
from api.routes import gate_cases, training
from api.schemas.common import UtcDatetime
from api.schemas.registry import (
    AdapterOut,
    AliasMoveIn,
    AliasMoveOut,
    AliasPointerOut,
    BaseModelIn,
    BaseModelOut,
    LineageOut,
    PromoteIn,
    ReasonIn,
    ResolvedOut,
    SpecialistAliasesOut,
    SpecialistIn,
    SpecialistOut,
)
from api.visibility import adapter_json, base_model_json, lineage_link_json, resolved_json
from inference.names import ModelRef
from trainer.registry.model import PROMOTED, REJECTED

router = APIRouter(prefix="/v1", tags=["registry"], route_class=StrictJsonRoute, responses=SECURED)
Limit = Annotated[int, Query(ge=1, le=1000)]


@router.get("/base-models", response_model=list[BaseModelOut])
def list_base_models(registry: RegistryDep, principal: RegistryRead) -> list[dict[str, Any]]:
    """Every registered base model (its directory: operator keys only)."""
    return [base_model_json(b, principal) for b in registry.base_models()]


@router.post("/base-models", status_code=201, response_model=BaseModelOut,
             responses={**BODY, **errors(409)})
def register_base_model(body: BaseModelIn, registry: RegistryDep,
                        principal: RegistryWrite) -> dict[str, Any]:
    """Register a local model directory by the sha256 of its weight files."""
    return base_model_json(registry.register_base_model(body.name, body.path, principal.actor),
                           principal)


@router.get("/base-models/{name}", response_model=BaseModelOut, responses=errors(404))
def get_base_model(name: str, registry: RegistryDep, principal: RegistryRead) -> dict[str, Any]:
    """One base model: weight hash, config and (operator keys only) its directory."""
    return base_model_json(registry.base_model(name), principal)


@router.get("/specialists", response_model=list[SpecialistAliasesOut])
def list_specialists(registry: RegistryDep, aliases: AliasesDep, _: RegistryRead) -> list[dict[str, Any]]:
    """The Mixture-of-LoRA slots, with the adapters their aliases point to now."""
    return [{**s.to_json(), "aliases": {a: m.adapter_id for a, m in aliases.current(s.name).items()}}
            for s in registry.specialists()]


@router.post("/specialists", status_code=201, response_model=SpecialistOut,
             responses={**BODY, **errors(409)})
def create_specialist(body: SpecialistIn, registry: RegistryDep,
                      principal: RegistryWrite) -> dict[str, Any]:
    """Add a specialist slot."""
    return registry.create_specialist(body.name, body.description, principal.actor).to_json()


@router.get("/specialists/{name}/adapters", response_model=list[AdapterOut], responses=errors(404))
def specialist_adapters(name: str, registry: RegistryDep, principal: RegistryRead,
                        limit: Limit = 100) -> list[dict[str, Any]]:
    """The specialist's adapter versions, newest first."""
    registry.specialist(name)
    return [adapter_json(a, principal) for a in registry.adapters(name, limit)]


@router.get("/specialists/{name}/aliases", response_model=dict[str, AliasMoveOut],
            responses=errors(404))
def current_aliases(name: str, aliases: AliasesDep, _: RegistryRead) -> dict[str, Any]:
    """Every alias of the specialist and the move that set it."""
    return {a: m.to_json() for a, m in aliases.current(name).items()}


@router.get("/specialists/{name}/aliases/{alias}", response_model=AliasPointerOut,
            responses=errors(404))
def alias_at(name: str, alias: str, aliases: AliasesDep, _: RegistryRead,
             at: UtcDatetime | None = None) -> dict[str, Any]:
    """Where the alias points now, or at time ``at`` (ISO 8601); 404 if it pointed nowhere."""
    move = aliases.at(name, alias, at)
    if move is None or move.adapter_id is None:
        when = f"at {at.isoformat()}" if at else "now"
        raise HTTPException(404, f"alias '{alias}' of '{name}' pointed nowhere {when}")
    return {"specialist": name, "alias": alias, "adapter_id": move.adapter_id,
            "at": at.isoformat() if at else None, "move": move.to_json()}


@router.get("/specialists/{name}/aliases/{alias}/history", response_model=list[AliasMoveOut],
            responses=errors(404))
def alias_history(name: str, alias: str, aliases: AliasesDep, _: RegistryRead,
                  limit: Limit = 100) -> list[dict[str, Any]]:
    """The alias's moves, newest first: who, when, from what, to what, and why."""
    return [m.to_json() for m in aliases.history(name, alias, limit)]


@router.put("/specialists/{name}/aliases/{alias}", response_model=AliasMoveOut,
            responses={**BODY, **errors(404, 409)})
def move_alias(name: str, alias: str, body: AliasMoveIn, aliases: AliasesDep,
               principal: RegistryWrite) -> dict[str, Any]:
    """Point the alias at a version (an alias.moved event)."""
    if "expected_current" in body.model_fields_set:
        move = aliases.move(name, alias, body.adapter_id, principal.actor, body.reason,
                            body.expected_current)
    else:
        move = aliases.move(name, alias, body.adapter_id, principal.actor, body.reason)
    return move.to_json()


@router.post("/specialists/{name}/aliases/{alias}/rollback", response_model=AliasMoveOut,
             responses={**BODY, **errors(404, 409)})
def rollback_alias(name: str, alias: str, body: ReasonIn, aliases: AliasesDep,
                   principal: RegistryWrite) -> dict[str, Any]:
    """Move the alias back to the version its latest move replaced."""
    return aliases.rollback(name, alias, principal.actor, body.reason).to_json()


@router.get("/specialists/{name}/resolve", response_model=ResolvedOut, responses=errors(404))
def resolve(name: str, resolver: ResolverDep, principal: RegistryRead,
            alias: str = "production") -> dict[str, Any]:
    """What a server loads for the alias: version, artifact sha256 (and, for operator keys,
    location), base model."""
    return resolved_json(resolver.resolve(ModelRef("slot", name), alias), principal)


@router.get("/adapters", response_model=list[AdapterOut])
def list_adapters(registry: RegistryDep, principal: RegistryRead, specialist: str | None = None,
                  limit: Limit = 100) -> list[dict[str, Any]]:
    """Adapter versions, by specialist, newest first."""
    return [adapter_json(a, principal) for a in registry.adapters(specialist, limit)]


@router.get("/adapters/{adapter_id}", response_model=AdapterOut, responses=errors(404))
def get_adapter(adapter_id: str, registry: RegistryDep, principal: RegistryRead) -> dict[str, Any]:
    """One adapter version with every lineage field, its metrics (the gate record's summary:
    its cases are at ``/v1/adapters/{id}/gate/samples``) and effective status."""
    return adapter_json(registry.adapter(adapter_id), principal)


@router.get("/adapters/{adapter_id}/lineage", response_model=LineageOut, responses=errors(404))
def lineage(adapter_id: str, chains: LineageDep, principal: RegistryRead,
            deep: bool = False) -> dict[str, Any]:
    """The chain back to the root, each link re-verified (``deep``: rebuild data, hash base;
    operators only, as it reads every tenant's events)."""
    if deep and not principal.operator:
        raise HTTPException(403, "deep lineage reads every tenant's events: operator keys only")
    chain = chains.chain(adapter_id, deep)
    return {"adapter_id": adapter_id, "verified": all(link["verified"] for link in chain),
            "chain": [lineage_link_json(link, principal) for link in chain]}


@router.post("/adapters/{adapter_id}/promote", response_model=AdapterOut,
             responses={**BODY, **errors(404, 409)})
def promote(adapter_id: str, body: PromoteIn, registry: RegistryDep,
            principal: RegistryWrite) -> dict[str, Any]:
    """Promote a version by hand (whatever its gate said) and move ``alias`` to it."""
    return adapter_json(registry.set_status(adapter_id, PROMOTED, principal.actor, body.reason,
                                            body.alias), principal)


@router.post("/adapters/{adapter_id}/reject", response_model=AdapterOut,
             responses={**BODY, **errors(404, 409)})
def reject(adapter_id: str, body: ReasonIn, registry: RegistryDep,
           principal: RegistryWrite) -> dict[str, Any]:
    """Mark a version rejected (aliases are not moved: roll them back explicitly)."""
    return adapter_json(registry.set_status(adapter_id, REJECTED, principal.actor, body.reason),
                        principal)


router.include_router(gate_cases.router)
router.include_router(training.router)
