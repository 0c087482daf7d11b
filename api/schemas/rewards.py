"""Bodies of the reward routes: ``RewardRecord.to_json()`` and pages of them."""

from __future__ import annotations

from pydantic import Field

from api.schemas.common import Number, Out, Timestamp, UuidText


class RewardSubjectOut(Out):
    id: str
    kind: str
    stream_id: str
    first_position: int
    last_position: int
    event_ids: list[str]


class RewardContractOut(Out):
    name: str
    version: int
    content_hash: str


class RewardOut(Out):
    reward_id: UuidText
    position: int | None
    subject: RewardSubjectOut
    contract: RewardContractOut
    evaluator_version: str
    score: float | None = Field(description="null exactly when errors is not empty")
    components: dict[str, Number]
    gates: dict[str, bool]
    split: str = Field(description='"train" or "held_out"')
    specialist: str | None
    adapter_version: str | None
    eligible: bool
    errors: list[dict[str, str]]
    created_at: Timestamp


class QueriedContractOut(Out):
    name: str
    version: int | None = Field(description="The version queried (latest resolved to a number)")


class RewardPageOut(Out):
    rewards: list[RewardOut]
    contract: QueriedContractOut | None
    next_after: int = Field(description="Pass as ?after= to read the next page")
    head: int = Field(description="The last reward position")
