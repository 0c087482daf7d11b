"""Training runs and what a delivery of a run's task comes to. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from kernel.errors import Conflict
from kernel.values import JsonValue

RunStatus = Literal["queued", "running", "succeeded", "failed"]
QUEUED: RunStatus = "queued"
RUNNING: RunStatus = "running"
SUCCEEDED: RunStatus = "succeeded"
FAILED: RunStatus = "failed"

# What one delivery of a run's task did: trained and registered (succeeded), found it
# finished (done), left it to a live holder (busy), failed it, gave up after too many
# attempts, or lost the lease to a worker that took over (lost).
Outcome = Literal["succeeded", "done", "busy", "failed", "gave_up", "lost"]
ClaimOutcome = Literal["claimed", "done", "busy", "failed", "gave_up"]


class LeaseLost(Conflict):
    """Another worker took the run over; this one must not register anything."""


@dataclass(frozen=True)
class TrainingRun(JsonValue):
    run_id: str
    specialist: str
    parent_adapter_id: str | None
    base_model: str
    manifest_id: str
    firing_id: str
    hyper: dict[str, Any]
    gate: dict[str, Any]
    status: RunStatus
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
    gate_outcome: str | None = None  # once succeeded: candidate | promoted | rejected

    @property
    def outcome(self) -> str:
        """The status, with what the gate made of a successor: "succeeded (rejected)"."""
        return f"{self.status} ({self.gate_outcome})" if self.gate_outcome else self.status

    @property
    def finished(self) -> bool:
        return self.status in (SUCCEEDED, FAILED)


@dataclass(frozen=True)
class Claim:
    outcome: ClaimOutcome
    run: TrainingRun
    retry_in: float = 0.0  # seconds until a held lease expires (outcome busy)


@dataclass(frozen=True)
class RunOutcome:
    outcome: Outcome
    run_id: str
    adapter_id: str | None = None
    retry_in: float = 0.0
    error: str | None = None
