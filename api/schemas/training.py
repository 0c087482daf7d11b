"""Bodies of the training routes: runs, trigger policies, firings and manual triggers."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from api.schemas.common import JsonObject, Out, Timestamp
from trainer.gate.policy import GatePolicy
from trainer.runs.model import RunStatus


class FireIn(BaseModel):
    parent: str | None = Field(
        None, description="Parent adapter id, 'root' for a fresh LoRA; default: the production one"
    )
    base_model: str | None = Field(None, description="Base model of a root version")
    reason: str = Field("", description="Recorded in the trigger.fired event")
    force: bool = Field(False, description="A new run even if this work (parent, data) was "
                        "fired before, with the policy's current hyper-parameters and gate; "
                        "needs a reason")
    hyper: JsonObject = Field(default_factory=dict,
                              description="Hyper-parameter overrides for this run")


class StartIn(FireIn):
    specialist: str


class RetryIn(BaseModel):
    reason: str = "retry"


class TrainingRunOut(Out):
    run_id: str
    specialist: str
    parent_adapter_id: str | None
    base_model: str
    manifest_id: str
    firing_id: str
    hyper: JsonObject
    gate: JsonObject = Field(description="The gate policy in force when the run was queued")
    status: RunStatus
    step: int
    total_steps: int
    last_loss: float | None
    error: str | None
    attempts: int
    lease_owner: str | None
    lease_until: Timestamp | None
    adapter_id: str | None = Field(description="The version it registered, once succeeded")
    created_by: str
    created_at: Timestamp
    updated_at: Timestamp
    started_at: Timestamp | None
    finished_at: Timestamp | None
    gate_outcome: str | None = Field(None, description="Once succeeded, what the gate made of "
                                     "the successor: candidate | promoted | rejected")


class FiringOut(Out):
    firing_id: str
    specialist: str
    parent_key: str = Field(description="The parent adapter id, or 'root'")
    dataset_cut: int = Field(description="Last eligible reward position included")
    policy: str = Field(description="count | drift | schedule | manual | forced")
    reason: str
    run_id: str
    fired_by: str
    fired_at: Timestamp
    rerun: int = Field(0, description="0: the work's first run; n: its n-th forced re-run")
    created: bool = Field(description="False when this work had been fired before")
    dispatched: bool = Field(description="False when the broker was unreachable: the run is "
                             "queued and a trainer worker re-sends it")


class FiredOut(Out):
    firing: FiringOut
    run: TrainingRunOut


class TriggerCheckOut(Out):
    specialist: str
    note: str = Field(description="Why it fired, or why not")
    firing: FiringOut | None


class RewardFloorOut(Out):
    threshold: float
    window: int


class TriggerPolicyOut(Out):
    """``TriggerPolicy`` as written. Keys added later are absent while at their defaults
    (routes serving it exclude unset fields, so nothing is filled in)."""

    enabled: bool = True
    min_new_rewards: int | None = None
    reward_floor: RewardFloorOut | None = None
    schedule: str | None = None
    auto_promote: bool = False
    gate_margin: float = 0.0
    regression_tolerance: dict[str, float] = Field(default_factory=dict)
    gate_metric: Literal["offline", "rollout"] = "offline"
    rollout_max_new_tokens: int = 24
    rollout_harness: str = "text"
    rollout_prompts: int = 32
    dataset: Literal["all", "since_parent"] = "all"
    base_model: str | None = None
    hyper: JsonObject = Field(default_factory=dict)
    alias: str | None = None
    contract: str | None = None
    backoff_factor: float = 2.0
    backoff_wait: str | None = None
    gate_test: Literal["margin", "bootstrap", "sign"] = "margin"
    gate_confidence: float = 0.95
    gate_resamples: int = 10_000
    gate_seed: int = 0
    gate_offline: bool = True


class ResolvedPolicyOut(Out):
    contract: str | None = Field(description="Only rewards made under this contract count")
    base_model: str | None
    gate: GatePolicy


class PolicyOut(Out):
    specialist: str
    source: str = Field(description='"api", "contract:<name>@<version>" or "none"')
    author: str | None = Field(None, description="Who set it: the API key's actor, or the "
                               "contract version's publisher; null for the defaults")
    policy: TriggerPolicyOut
    resolved: ResolvedPolicyOut


class SpecialistStateOut(Out):
    specialist: str
    parent_adapter_id: str | None
    parent_cut: int
    eligible_head: int
    new_eligible: int
    production_mean: float | None
    production_count: int
    last_fired_at: Timestamp | None
    now: Timestamp
    counted_from: int = Field(description="New data counts after this reward position: the "
                              "cut of the last run on the parent, else the parent's own")
    rejections: int = Field(description="Consecutive latest runs on the parent the gate rejected")
    rejected_at: Timestamp | None


class PolicyStateOut(PolicyOut):
    state: SpecialistStateOut = Field(description="What the policy is evaluated against now")
