"""Routes of reward records: query by contract version (or the latest published one)."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query

from api.deps import ContractsDep, RewardsDep, RewardsRead
from api.errors import invalid_field
from api.jsonbody import StrictJsonRoute
from api.responses import SECURED, errors
from api.schemas.common import INT32_MAX, INT64_MAX
from api.schemas.rewards import RewardOut, RewardPageOut
from api.visibility import reward_json
from evaluators.refs import parse_contract_ref, reward_query

router = APIRouter(prefix="/v1/rewards", tags=["rewards"], route_class=StrictJsonRoute,
                   responses=SECURED)


@router.get("", response_model=RewardPageOut, responses=errors(404))
def list_rewards(
    rewards: RewardsDep, contracts: ContractsDep, principal: RewardsRead,
    contract: Annotated[str | None, Query(description="NAME, NAME@<version> or NAME@latest")] = None,
    version: Annotated[str | None, Query(pattern=r"^(\d+|latest)$",
                                         description="A version number, or latest published")] = None,
    subject_id: str | None = None, stream_id: str | None = None, specialist: str | None = None,
    eligible: bool | None = None,
    after: Annotated[int, Query(ge=0, le=INT64_MAX, description="Last reward position already seen")] = 0,
    limit: Annotated[int, Query(ge=1, le=5000)] = 500,
) -> dict[str, Any]:
    """Reward records in position order; ``version=latest`` means the latest published version.
    Error messages quote event text only to keys with events:read."""
    name, at = (None, None)
    if contract is not None:
        try:
            name, at = parse_contract_ref(contract)
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        _check_version("contract", at)
    _check_version("version", version)
    if version is not None and at is not None and version != at:
        raise HTTPException(422, f"contract={contract} and version={version} disagree")
    if (version or at) and name is None:
        raise HTTPException(422, "a version needs a contract name")
    query = reward_query(contracts, name, version or at, subject_id=subject_id,
                         stream_id=stream_id, specialist=specialist, eligible=eligible,
                         tenant=principal.tenant, after=after, limit=limit)
    found = rewards.find(query)
    return {"rewards": [reward_json(r, principal) for r in found],
            "contract": None if name is None else {"name": name, "version": query.contract_version},
            "next_after": found[-1].position if found else after,
            "head": rewards.head(principal.tenant)}


def _check_version(field: str, text: str | None) -> None:
    """A version number must be ASCII digits within the database's INTEGER range."""
    if text is None or text == "latest":
        return
    if not (text.isascii() and text.isdigit() and 1 <= int(text) <= INT32_MAX):
        raise invalid_field(field, f"the version must be a number from 1 to {INT32_MAX} "
                            "or 'latest'")


@router.get("/{reward_id}", response_model=RewardOut, responses=errors(404))
def get_reward(reward_id: uuid.UUID, rewards: RewardsDep, principal: RewardsRead) -> dict[str, Any]:
    """One reward record by id."""
    found = rewards.get(reward_id, principal.tenant)
    if found is None:
        raise HTTPException(404, f"no reward {reward_id}")
    return reward_json(found, principal)
