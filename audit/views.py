"""The answers of the lineage queries, as pydantic models: the API declares them as its
response models and the CLI prints them, so both speak the same documented shape."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field


class ContractVersionRef(BaseModel):
    name: str
    version: int
    content_hash: str | None = Field(description="sha256 of the version's canonical document")


class BaseModelRef(BaseModel):
    name: str
    path: str = Field(description="The registered local directory (what a loader resolves)")
    weights_sha256: str


class RunRef(BaseModel):
    run_id: str
    status: str
    created_by: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    attempts: int
    hyper: dict[str, Any]


class TriggerRef(BaseModel):
    firing_id: str
    policy: str = Field(description="count | drift | schedule | manual")
    reason: str
    fired_by: str
    fired_at: datetime
    dataset_cut: int = Field(description="The last reward position the manifest could include")


class ManifestRef(BaseModel):
    manifest_id: str
    specialist: str
    content_hash: str
    examples_sha256: str
    cut_from: int
    cut_to: int
    reward_count: int
    split: dict[str, int] = Field(description="Examples per split: train and held_out")
    contract_versions: list[ContractVersionRef]


class ArtifactOut(BaseModel):
    sha256: str
    uri: str


class VersionLineage(BaseModel):
    """One adapter version as an auditor reads it: what made it, from what, and the gate."""

    adapter_id: str
    specialist: str
    version: int
    depth: int = Field(description="Generations above the version asked about (0: itself)")
    parent_adapter_id: str | None
    status: str
    registered_status: str
    registered_by: str
    registered_at: datetime
    artifact: ArtifactOut
    run: RunRef | None
    trigger: TriggerRef | None
    manifest: ManifestRef | None
    contract_versions: list[ContractVersionRef]
    base_model: BaseModelRef | None
    gate: dict[str, Any] | None = Field(description="The gate's record: metric, both means, decision")


class UpstreamOut(BaseModel):
    adapter_id: str
    root_id: str
    versions: list[VersionLineage] = Field(description="The version first, its root last")


class MemberOut(BaseModel):
    manifest_id: str
    reward_position: int
    reward_id: str
    subject_id: str
    stream_id: str
    split: str


class EventRef(BaseModel):
    event_id: str
    stream_id: str
    stream_seq: int
    position: int
    type: str
    recorded_at: datetime
    hash: str


class RecordOut(BaseModel):
    member: MemberOut
    reward: dict[str, Any] = Field(description="The reward record in its wire form")
    events: list[EventRef] = Field(description="The subject's events, in stream order")


class RecordsPage(BaseModel):
    adapter_id: str
    manifest_id: str
    total: int = Field(description="Members of the manifest (of the split, when one is asked)")
    records: list[RecordOut]
    next_after: int | None = Field(description="Pass as ?after= for the next page; null: the end")


class ManifestOut(ManifestRef):
    created_at: datetime
    verified: bool = Field(description="The stored content still hashes to content_hash")
    adapters: list[str] = Field(description="Versions trained on this manifest")


class MembersPage(BaseModel):
    manifest_id: str
    members: list[MemberOut]
    next_after: int | None


class SourceOut(BaseModel):
    kind: Literal["event", "stream", "tenant", "contract_version"]
    id: str


class RewardRef(BaseModel):
    reward_id: str
    position: int
    subject_id: str
    stream_id: str
    contract: str = Field(description="name@version")
    score: float | None
    split: str


class RewardsReached(BaseModel):
    count: int
    items: list[RewardRef] = Field(description="The first ones, in position order")
    next_after: int | None


class ManifestReached(BaseModel):
    manifest_id: str
    specialist: str
    content_hash: str
    members: int = Field(description="How many of its rewards come from the source")
    adapters: list[str] = Field(description="Versions trained on it")


class AdapterReached(BaseModel):
    adapter_id: str
    specialist: str
    version: int
    status: str
    generations: int = Field(description="0: trained on the source's data; n: its n-th descendant")


class WindowOut(BaseModel):
    specialist: str
    alias: str
    adapter_id: str
    since: datetime
    until: datetime | None = Field(description="null: the alias still points there")
    since_position: int
    until_position: int | None


class DownstreamOut(BaseModel):
    source: SourceOut
    rewards: RewardsReached
    manifests: list[ManifestReached]
    adapters: list[AdapterReached]
    windows: list[WindowOut] = Field(description="When an alias served any reached version")


class AliasAt(BaseModel):
    specialist: str
    alias: str
    adapter_id: str
    moved_at: datetime
    moved_by: str
    position: int


class ContractAt(BaseModel):
    name: str
    version: int
    content_hash: str
    published_at: datetime


class AsOfOut(BaseModel):
    at: datetime
    aliases: list[AliasAt]
    contracts: list[ContractAt]
