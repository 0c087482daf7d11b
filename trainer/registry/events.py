"""The registry's events: specialists, base models, adapter versions, aliases. Pure.

Every one is written on a specialist's stream (``specialist:<name>``) except a base
model's (``base_model:<name>``), in the transaction that applies its projectors
(``trainer.registry.projections``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from events.server_events import ServerEvent


class SpecialistCreated(ServerEvent):
    TYPE = "specialist.created"
    SUMMARY = "A specialist (a Mixture-of-LoRA slot) was created"

    name: str
    description: str


class BaseModelRegistered(ServerEvent):
    TYPE = "base_model.registered"
    SUMMARY = "A base model was registered by its weights' hash"

    name: str
    path: str
    weights_sha256: str
    config: dict[str, Any]
    source: dict[str, Any] | None = Field(None, description="Where the weights came from, when known")


class ContractLink(BaseModel):
    """A contract version whose rewards trained the version."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    version: int


class AdapterRegistered(ServerEvent):
    TYPE = "adapter.registered"
    VERSION = 2
    SUMMARY = "A training run's successor was registered, with its whole lineage"
    # v2 records what v1 kept only in the row: every metric and the artifact's URI.
    UPCASTERS = {1: lambda p: {**p, "metrics": None, "artifact_uri": None}}

    adapter_id: str
    version: int
    parent_adapter_id: str | None
    base_model: str
    training_run_id: str
    manifest_id: str
    contract_versions: list[ContractLink]
    hyper: dict[str, Any]
    artifact_sha256: str
    status: str
    gate: dict[str, Any] | None = Field(description="The gate's verdict (also in metrics)")
    metrics: dict[str, Any] | None = Field(description="None: written before version 2")
    artifact_uri: str | None = Field(description="None: written before version 2")


class AdapterStatusChanged(ServerEvent):
    TYPE = "adapter.status_changed"
    SUMMARY = "An adapter version was promoted, rejected or rolled back from"

    adapter_id: str
    status: str
    previous_status: str | None
    reason: str


class AliasMoved(ServerEvent):
    TYPE = "alias.moved"
    SUMMARY = "An alias (production, staging …) of a specialist was moved"

    specialist: str
    alias: str
    adapter_id: str | None
    previous_adapter_id: str | None
    reason: str
    kind: Literal["move", "rollback"] = "move"


class AliasProtectionChanged(ServerEvent):
    TYPE = "alias.protection_changed"
    SUMMARY = "Moving an alias started (or stopped) needing a second actor's approval"

    specialist: str
    alias: str
    protected: bool
    reason: str


class AliasMoveRequested(ServerEvent):
    TYPE = "alias.move_requested"
    SUMMARY = "A move of a protected alias was requested"

    request_id: str
    specialist: str
    alias: str
    kind: Literal["move", "rollback"]
    adapter_id: str | None
    expected_current: str | None
    reason: str


class _MoveDecided(ServerEvent):
    request_id: str
    specialist: str
    alias: str
    reason: str


class AliasMoveApproved(_MoveDecided):
    TYPE = "alias.move_approved"
    SUMMARY = "A second actor approved a requested alias move (the alias.moved follows)"


class AliasMoveRejected(_MoveDecided):
    TYPE = "alias.move_rejected"
    SUMMARY = "A second actor rejected a requested alias move"
