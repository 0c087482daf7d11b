"""Trigger policies: when a specialist should get a successor, and why. Pure: no I/O.

A policy is evaluated against a snapshot of the specialist (``SpecialistState``) and
returns at most one ``FireDecision``. The decision names the dataset cut (the last
eligible reward position it covers); together with the specialist and the parent it is
the key that makes a firing exactly-once: evaluating the same state again, in another
process or after a restart, yields the same key, and the registry refuses a second
firing with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from contract.schedule import parse_schedule
from contract.sections import ContractDocument

ROOT = "root"  # parent key of a version trained from a fresh LoRA


class GatePolicy(BaseModel):
    """How a successor is judged against its parent, and what happens when it passes."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    margin: float = Field(0.0, description="Held-out margin the successor must gain over its parent")
    regression_tolerance: dict[str, float] = Field(
        default_factory=dict,
        description="Criterion id (or '*') -> largest allowed drop; criteria not named are not gated",
    )
    auto_promote: bool = Field(False, description="Move `alias` to a successor that passes the gate")
    alias: str = Field("production", min_length=1, max_length=100)
    metric: Literal["offline", "rollout"] = Field(
        "offline", description="offline: log-likelihood margin on held-out rewarded examples; "
        "rollout: mean contract reward of responses generated for the held-out prompts",
    )
    rollout_harness: str = Field("text", min_length=1, max_length=100,
                                 description="Registered rollout harness (trainer.rollout)")
    rollout_max_new_tokens: int = Field(24, ge=1, le=1024, description="Tokens generated per prompt")
    rollout_prompts: int = Field(32, ge=1, le=1024,
                                 description="At most this many held-out subjects (the latest)")

    def tolerance_for(self, criterion: str) -> float | None:
        return self.regression_tolerance.get(criterion, self.regression_tolerance.get("*"))


class TriggerPolicy(BaseModel):
    """When to train a specialist's successor (the first enabled rule that fires) and how."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    enabled: bool = True
    min_new_rewards: int | None = Field(
        None, ge=1, description="Fire when this many new eligible rewards arrived since the parent"
    )
    reward_floor: float | None = Field(
        None, description="Fire when the production adapter's mean reward falls below this"
    )
    reward_window: int = Field(50, ge=1, description="How many latest rewards the mean covers")
    schedule: str | None = Field(
        None, description="'every <n>m|h|d' or a five-field cron line (UTC); fires when due "
        "and any new eligible reward exists"
    )
    contract: str | None = Field(None, description="Use only rewards made under this contract")
    dataset: Literal["all", "since_parent"] = Field(
        "all", description="Train on every eligible reward, or only those after the parent's cut"
    )
    base_model: str | None = Field(None, description="Base model of root versions")
    hyper: dict[str, Any] = Field(default_factory=dict, description="HyperParams overrides")
    gate: GatePolicy = Field(default_factory=GatePolicy)

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, text: str | None) -> str | None:
        if text is not None:
            parse_schedule(text)  # raises ValueError naming what is wrong
        return text

    @model_validator(mode="after")
    def _fires(self) -> TriggerPolicy:
        if self.enabled and self.min_new_rewards is None and self.reward_floor is None \
                and self.schedule is None:
            raise ValueError("an enabled policy needs min_new_rewards, reward_floor or schedule")
        return self


DISABLED = TriggerPolicy(enabled=False)  # no policy anywhere: only manual triggers


@dataclass(frozen=True)
class SpecialistState:
    """What the policy looks at; gathered by the registry in one read."""

    specialist: str
    parent_adapter_id: str | None  # what the next run trains from (the production adapter)
    parent_cut: int  # last reward position in the parent's dataset; 0 for a root
    eligible_head: int  # last eligible reward position of this specialist (0: none)
    new_eligible: int  # eligible rewards after parent_cut
    production_mean: float | None  # mean score of the last reward_window rewards it served
    production_count: int
    last_fired_at: datetime | None  # latest automatic firing of this specialist
    now: datetime

    @property
    def parent_key(self) -> str:
        return self.parent_adapter_id or ROOT


@dataclass(frozen=True)
class FireDecision:
    policy: str  # count | drift | schedule | manual
    reason: str
    dataset_cut: int  # last reward position included
    cut_from: int  # rewards after this position are included


def decide(policy: TriggerPolicy, state: SpecialistState) -> FireDecision | None:
    """The first rule that fires (count, then drift, then schedule), or None.

    No rule fires without at least one new eligible reward since the parent's cut: the
    same data on the same parent is the same work, already done.
    """
    if not policy.enabled or state.new_eligible < 1:
        return None
    parent = state.parent_adapter_id or "a fresh root"
    if policy.min_new_rewards is not None and state.new_eligible >= policy.min_new_rewards:
        return _fire(policy, state, "count", f"{state.new_eligible} new eligible rewards since "
                     f"{parent} was trained (threshold {policy.min_new_rewards})")
    if (policy.reward_floor is not None and state.production_mean is not None
            and state.production_count >= policy.reward_window
            and state.production_mean < policy.reward_floor):
        return _fire(policy, state, "drift", f"mean reward of {parent} over its last "
                     f"{state.production_count} rewards is {state.production_mean:.4f}, "
                     f"below {policy.reward_floor}")
    if policy.schedule is not None and _due(policy.schedule, state):
        return _fire(policy, state, "schedule", f"schedule '{policy.schedule}' is due; "
                     f"{state.new_eligible} new eligible rewards since {parent}")
    return None


def manual(policy: TriggerPolicy, state: SpecialistState, reason: str) -> FireDecision:
    """A firing asked for by a person; it still needs some eligible reward to learn from."""
    if state.eligible_head < 1:
        raise NothingToTrain(f"specialist '{state.specialist}' has no eligible rewards yet")
    return _fire(policy, state, "manual", reason or "manual trigger")


class NothingToTrain(ValueError):
    pass


def _due(schedule: str, state: SpecialistState) -> bool:
    if state.last_fired_at is None:
        return True
    due = parse_schedule(schedule).next_after(state.last_fired_at)
    return due is not None and due <= state.now


def _fire(policy: TriggerPolicy, state: SpecialistState, name: str, reason: str) -> FireDecision:
    cut_from = state.parent_cut if policy.dataset == "since_parent" else 0
    return FireDecision(policy=name, reason=reason, dataset_cut=state.eligible_head,
                        cut_from=cut_from)


def policy_from_contract(doc: ContractDocument, specialist: str, contract: str) -> TriggerPolicy | None:
    """The contract's ``[training.triggers.<specialist>]`` as a trainer policy (None: absent).

    Only that contract's rewards are used for the specialist's datasets; the gate moves
    the alias the harness serves the slot from; roots use the harness's base model.
    """
    trigger = doc.training.triggers.get(specialist)
    if trigger is None:
        return None
    slot = doc.harness.specialists.get(specialist)
    floor = trigger.reward_floor
    return TriggerPolicy(
        enabled=trigger.enabled, min_new_rewards=trigger.min_new_rewards,
        reward_floor=floor.threshold if floor else None,
        reward_window=floor.window if floor else 50, schedule=trigger.schedule,
        contract=contract, base_model=doc.harness.base_model,
        gate=GatePolicy(margin=trigger.gate_margin, auto_promote=trigger.auto_promote,
                        regression_tolerance=dict(trigger.regression_tolerance),
                        alias=slot.adapter_alias if slot else "production",
                        metric=trigger.gate_metric,
                        rollout_max_new_tokens=trigger.rollout_max_new_tokens),
    )
