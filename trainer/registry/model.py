"""Registry entities as frozen value objects. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from kernel.values import JsonValue

AdapterStatus = Literal["candidate", "promoted", "rejected", "rolled_back"]
CANDIDATE: AdapterStatus = "candidate"
PROMOTED: AdapterStatus = "promoted"
REJECTED: AdapterStatus = "rejected"
ROLLED_BACK: AdapterStatus = "rolled_back"  # an alias was rolled back away from it


ADAPTER_ID_LENGTH = 120  # "<specialist>@<version>", as stored


def adapter_id_of(specialist: str, version: int) -> str:
    return f"{specialist}@{version}"


@dataclass(frozen=True)
class BaseModelEntry(JsonValue):
    name: str
    path: str
    weights_sha256: str
    config: dict[str, Any]
    registered_by: str
    registered_at: datetime
    source: dict[str, Any] | None = None  # provenance: package, version, file sha256


@dataclass(frozen=True)
class Specialist(JsonValue):
    name: str
    description: str
    created_by: str
    created_at: datetime


@dataclass(frozen=True)
class ContractRef(JsonValue):
    name: str
    version: int
    content_hash: str | None = None


@dataclass(frozen=True)
class AdapterVersion(JsonValue):
    adapter_id: str
    specialist: str
    version: int
    parent_adapter_id: str | None
    base_model: str
    training_run_id: str
    manifest_id: str
    hyper: dict[str, Any]
    metrics: dict[str, Any]
    artifact_sha256: str
    artifact_uri: str
    registered_status: AdapterStatus  # what the gate made it at registration
    status: AdapterStatus  # effective: the latest status change, else registered_status
    registered_by: str
    registered_at: datetime
    contract_versions: list[ContractRef] = field(default_factory=list)


@dataclass(frozen=True)
class NewAdapter:
    """What a finished training run registers (the registry assigns version and id)."""

    specialist: str
    parent_adapter_id: str | None
    base_model: str
    training_run_id: str
    manifest_id: str
    hyper: dict[str, Any]
    contract_versions: tuple[tuple[str, int], ...]  # (name, version) of the rewards used
    metrics: dict[str, Any]
    artifact_sha256: str
    artifact_uri: str
    status: AdapterStatus


@dataclass(frozen=True)
class AliasMove(JsonValue):
    position: int
    specialist: str
    alias: str
    adapter_id: str | None
    previous_adapter_id: str | None
    actor: str
    reason: str
    moved_at: datetime
    kind: str = "move"  # move | rollback (then previous_adapter_id is what was rolled back from)


@dataclass(frozen=True)
class AliasWindow(JsonValue):
    """A span during which ``alias`` pointed at ``adapter_id`` (``until`` None: it still does)."""

    specialist: str
    alias: str
    adapter_id: str
    since: datetime
    since_position: int  # the alias.moved event that set it
    until: datetime | None
    until_position: int | None  # the next move of the alias
