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


class JudgementOut(Out):
    judge: str = Field(description="The judge's id in the contract")
    model: str = Field(description="The judge model's weights digest (sha256:…)")
    prompt_hash: str = Field(description="sha256 of the rendered messages and the token budget")
    seed: int
    verdict: str = Field(description="The judge's raw answer, as recorded")
    verdict_event: str | None = Field(description="The judge.verdict event that recorded it")
    score: float | None = Field(description="The verdict read on the judge's scale; null: unreadable")
    scores: list[float] | None = Field(None, description="Relative judges: one per answer")
    error: str | None = Field(description="Why the verdict could not be read")


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
    tenant: str | None = Field(None, description="The subject's tenant; null: operators only")
    errors: list[dict[str, str]]
    created_at: Timestamp
    prev_hash: str | None = Field(description="The reward chain: the hash of the reward before it")
    hash: str | None = Field(description="SHA-256 of prev_hash and this record's canonical JSON "
                             "(without the two hashes); see docs/audit.md")
    judgements: list[JudgementOut] | None = Field(
        None, description="The judges' verdicts the score rests on (a contract with judges "
        "only): the judge model's digest, the prompt's hash, the seed, the raw verdict")


class QueriedContractOut(Out):
    name: str
    version: int | None = Field(description="The version queried (latest resolved to a number)")


class RewardPageOut(Out):
    rewards: list[RewardOut]
    contract: QueriedContractOut | None
    next_after: int = Field(description="Pass as ?after= to read the next page")
    head: int = Field(description="The last reward position")
