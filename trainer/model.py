"""Registry entities as frozen value objects, and the registry's errors. Pure."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

CANDIDATE, PROMOTED, REJECTED = "candidate", "promoted", "rejected"
QUEUED, RUNNING, SUCCEEDED, FAILED = "queued", "running", "succeeded", "failed"


def adapter_id_of(specialist: str, version: int) -> str:
    return f"{specialist}@{version}"


class RegistryError(Exception):
    pass


class NotFound(RegistryError, LookupError):
    """The named thing does not exist (HTTP 404)."""


class Conflict(RegistryError):
    """The change contradicts what is stored (HTTP 409)."""


class Invalid(RegistryError, ValueError):
    """The request cannot be carried out as asked (HTTP 422)."""


def _json(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    return value


class _Entity:
    def to_json(self) -> dict[str, Any]:
        return {k: _json(v) for k, v in asdict(self).items()}  # type: ignore[call-overload]


@dataclass(frozen=True)
class BaseModelEntry(_Entity):
    name: str
    path: str
    weights_sha256: str
    config: dict[str, Any]
    registered_by: str
    registered_at: datetime


@dataclass(frozen=True)
class Specialist(_Entity):
    name: str
    description: str
    created_by: str
    created_at: datetime


@dataclass(frozen=True)
class ContractRef(_Entity):
    name: str
    version: int
    content_hash: str | None = None


@dataclass(frozen=True)
class AdapterVersion(_Entity):
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
    registered_status: str  # what the gate made it at registration
    status: str  # effective: the latest status change, else registered_status
    registered_by: str
    registered_at: datetime
    contract_versions: list[ContractRef] = field(default_factory=list)


@dataclass(frozen=True)
class AliasMove(_Entity):
    position: int
    specialist: str
    alias: str
    adapter_id: str | None
    previous_adapter_id: str | None
    actor: str
    reason: str
    moved_at: datetime


@dataclass(frozen=True)
class TrainingRun(_Entity):
    run_id: str
    specialist: str
    parent_adapter_id: str | None
    base_model: str
    manifest_id: str
    firing_id: str
    hyper: dict[str, Any]
    gate: dict[str, Any]
    status: str
    step: int
    total_steps: int
    last_loss: float | None
    error: str | None
    attempts: int
    lease_owner: str | None
    lease_until: datetime | None
    adapter_id: str | None
    created_by: str
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    @property
    def finished(self) -> bool:
        return self.status in (SUCCEEDED, FAILED)


@dataclass(frozen=True)
class Firing(_Entity):
    firing_id: str
    specialist: str
    parent_key: str
    dataset_cut: int
    policy: str
    reason: str
    run_id: str
    fired_by: str
    fired_at: datetime
    created: bool = True  # False when this work had already been fired before
