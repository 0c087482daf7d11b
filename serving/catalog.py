"""``GET /v1/models``: what a request's ``model`` may name, in OpenAI's list shape."""

from __future__ import annotations

from typing import Any

from inference.names import AUTO, ModelInvalid, parse_model
from kernel.errors import NotFound
from serving.choice import Chooser, ModelNotFound
from trainer.registry.aliases import Aliases

OWNER = "hcp"


def model_list(chooser: Chooser, aliases: Aliases) -> dict[str, Any]:
    slots = chooser.slots()
    data: list[dict[str, Any]] = [_model(AUTO, {"routed_by": "the serving contract's router",
                                                "specialists": sorted(slots)})]
    for specialist, config in sorted(slots.items()):
        slot_alias = config.harness.specialists[specialist].adapter_alias
        try:
            current = aliases.current(specialist)
        except NotFound:
            current = {}
        served = current.get(slot_alias)
        data.append(_model(specialist, {
            "alias": slot_alias, "adapter_id": served.adapter_id if served else None,
            "served_base": served is None or served.adapter_id is None, "contract": config.ref}))
        data += [_model(f"{specialist}@{alias}", {"alias": alias, "adapter_id": move.adapter_id})
                 for alias, move in sorted(current.items()) if move.adapter_id is not None]
    return {"object": "list", "data": data}


def model_entry(chooser: Chooser, aliases: Aliases, model_id: str) -> dict[str, Any]:
    """One entry of the list by id; a name the list does not show (a version, a digest)
    by what it resolves to. Raises ModelNotFound (404) for a name that serves nothing."""
    listed = next((m for m in model_list(chooser, aliases)["data"] if m["id"] == model_id), None)
    if listed is not None:
        return listed
    try:
        ref = parse_model(model_id)
    except ModelInvalid as exc:
        raise ModelNotFound(str(exc)) from None
    choice = chooser.choose(ref, "")
    return _model(model_id, {"specialist": choice.specialist, "adapter_id": choice.adapter_id,
                             "adapter_digest": choice.digest, "served_base": choice.served_base,
                             "base_weights_sha256": choice.base.weights_sha256,
                             "contract": choice.config.ref})


def _model(model_id: str, hcp: dict[str, Any]) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": 0, "owned_by": OWNER, "hcp": hcp}
