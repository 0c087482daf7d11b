"""Bodies of the registry routes: base models, specialists, adapter versions, aliases."""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from api.schemas.common import JsonObject, Out, Timestamp
from trainer.registry.model import AdapterStatus


class BaseModelIn(BaseModel):
    name: str = Field(min_length=1, max_length=100)
    path: str = Field(min_length=1, max_length=4096, description="A model directory on the server's disk")

    @field_validator("path")
    @classmethod
    def _no_nul(cls, path: str) -> str:
        if "\x00" in path:
            raise ValueError("a path cannot contain a NUL character")
        return path


class SpecialistIn(BaseModel):
    name: str = Field(min_length=1, max_length=100)
    description: str = ""


class AliasMoveIn(BaseModel):
    adapter_id: str | None = Field(description="Target version; null unsets the alias")
    reason: str = Field(min_length=1, description="Why: recorded in the alias.moved event")
    expected_current: str | None = Field(
        None, description="Refuse (409) unless the alias points here now; send null for 'unset'"
    )


class ReasonIn(BaseModel):
    reason: str = Field(min_length=1)


class PromoteIn(ReasonIn):
    alias: str | None = Field("production", description="Alias to move to the version; null: none")


class BaseModelOut(Out):
    name: str
    path: str | None = Field(description="The directory on the server; null for a tenant's key")
    weights_sha256: str
    config: JsonObject = Field(description="The model's config.json")
    registered_by: str
    registered_at: Timestamp
    source: JsonObject | None = Field(None, description="Where the weights came from, when "
                                      "known: package, version, file and its sha256")


class SpecialistOut(Out):
    name: str
    description: str
    created_by: str
    created_at: Timestamp


class SpecialistAliasesOut(SpecialistOut):
    aliases: dict[str, str | None] = Field(description="Alias -> the adapter it points to now")


class ContractRefOut(Out):
    name: str
    version: int
    content_hash: str | None


class AdapterOut(Out):
    adapter_id: str = Field(description="<specialist>@<version>")
    specialist: str
    version: int
    parent_adapter_id: str | None
    base_model: str
    training_run_id: str
    manifest_id: str
    hyper: JsonObject
    metrics: JsonObject
    artifact_sha256: str
    artifact_uri: str | None = Field(description="Where the server stores it; null for a "
                                     "tenant's key (download: /v1/adapters/{id}/artifact)")
    registered_status: AdapterStatus = Field(description="What the gate made it at registration")
    status: AdapterStatus = Field(description="Effective: the latest status change")
    registered_by: str
    registered_at: Timestamp
    contract_versions: list[ContractRefOut]


class GateAnswerOut(Out):
    answer: str | None = Field(description="What the model generated for the held-out prompt")
    reward: float | None = Field(description="The contract's reward of that answer")


class GateCaseOut(Out):
    index: int = Field(description="The case's place in the gate's order; pass as ?after=")
    subject_id: str = Field(description="The held-out subject judged with the answer")
    successor: GateAnswerOut
    parent: GateAnswerOut


class GateCasesOut(Out):
    adapter_id: str
    total: int = Field(description="Cases the gate judged")
    cases: list[GateCaseOut]
    next_after: int | None = Field(description="Pass as ?after= for the next page; null at the end")
    error_samples: dict[str, list[str]] = Field(
        description="Per side, a few distinct errors of answers the contract could not score")


class AliasMoveOut(Out):
    position: int
    specialist: str
    alias: str
    adapter_id: str | None
    previous_adapter_id: str | None
    actor: str
    reason: str
    moved_at: Timestamp
    kind: str = Field(description="move | rollback (previous_adapter_id: the version rolled "
                      "back from, now rolled_back)")


class AliasPointerOut(Out):
    specialist: str
    alias: str
    adapter_id: str
    at: Timestamp | None = Field(description="The time asked about; null: now")
    move: AliasMoveOut


class BaseModelRefOut(Out):
    name: str
    path: str | None = Field(description="The directory on the server; null for a tenant's key")
    weights_sha256: str


class ResolvedOut(Out):
    specialist: str
    alias: str
    adapter_id: str
    version: int
    artifact_sha256: str
    artifact_uri: str | None = Field(description="Where the server stores it; null for a "
                                     "tenant's key")
    base_model: BaseModelRefOut
    moved_at: Timestamp


class LinkBaseModelOut(Out):
    name: str
    weights_sha256: str
    verified: bool | None = Field(description="Weights re-hashed (deep only); null: not checked")


class LinkManifestOut(Out):
    manifest_id: str
    content_hash: str
    examples_sha256: str
    reward_count: int
    example_count: int
    split: dict[str, int] = Field(description='Example counts, e.g. {"train": n, "held_out": m}')
    cut_from: int
    cut_to: int
    verified: bool
    rebuilt: bool | None = Field(description="Examples rebuilt from the log (deep only)")


class LinkArtifactOut(Out):
    sha256: str
    uri: str | None = Field(description="Where the server stores it; null for a tenant's key")
    verified: bool
    note: str | None


class LineageLinkOut(Out):
    adapter_id: str
    specialist: str
    version: int
    status: AdapterStatus
    parent_adapter_id: str | None
    training_run_id: str
    registered_at: Timestamp
    base_model: LinkBaseModelOut
    manifest: LinkManifestOut
    contract_versions: list[ContractRefOut]
    hyper: JsonObject
    artifact: LinkArtifactOut
    verified: bool


class LineageOut(Out):
    adapter_id: str
    verified: bool = Field(description="Every link verified")
    chain: list[LineageLinkOut] = Field(description="The version first, then its parents to the root")
