"""The trigger policy: the one schema of "when to train a specialist, and how to gate it".

A contract writes it as ``[training.triggers.<specialist>]``; the API (``PUT
/v1/triggers/{specialist}``) and ``hcp triggers set`` take the same document as JSON.
The trainer resolves it (``trainer.triggers.policy``) against where it came from.

Keys added after documents were published are left out of the canonical form while
they hold their defaults, so the content hash of those documents stays what it was.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from contract.schedule import parse_duration, parse_schedule

Unit = Annotated[float, Field(ge=0.0, le=1.0)]


class RewardFloor(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    threshold: Unit = Field(description="Fire when the serving adapter's mean reward is below this")
    window: Annotated[int, Field(ge=1)] = Field(description="Over its most recent N rewards")


class TriggerPolicy(BaseModel):
    """When to train a specialist's successor (the first enabled rule that fires) and how."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    enabled: bool = True
    min_new_rewards: Annotated[int, Field(ge=1)] | None = Field(
        None, description="Fire when this many new subjects have an eligible train-split reward "
        "since the last run on the parent (counted under the serving contract version)")
    reward_floor: RewardFloor | None = None
    schedule: str | None = Field(
        None, description="'every <n>m|h|d' or a five-field cron line (UTC); fires when due "
        "and any new eligible reward exists")
    auto_promote: bool = Field(False, description="Move the serving alias to a successor that passes")
    gate_margin: Annotated[float, Field(ge=-1.0, le=1.0)] = Field(
        0.0, description="What the successor must gain over its parent on the gate's metric")
    regression_tolerance: dict[str, Unit] = Field(
        {}, description="Criterion id (or '*') -> largest allowed drop; criteria not named "
        "are not gated")
    # offline: log-likelihood margin on held-out rewarded examples; rollout: mean contract
    # reward of responses the models generate for the held-out prompts.
    gate_metric: Literal["offline", "rollout"] = "offline"
    rollout_max_new_tokens: Annotated[int, Field(ge=1, le=1024)] = 24
    # --- added later: left out of the canonical form at their defaults ---------------
    rollout_harness: Annotated[str, Field(min_length=1, max_length=100)] = Field(
        "text", description="Registered rollout harness the gate generates with")
    rollout_prompts: Annotated[int, Field(ge=1, le=1024)] = Field(
        32, description="At most this many held-out subjects (the latest)")
    dataset: Literal["all", "since_parent"] = Field(
        "all", description="Train on every eligible reward, or only those after the parent's "
        "cut (the held-out rewards the gate compares on are all kept either way)")
    base_model: str | None = Field(None, description="Base model of root versions")
    hyper: dict[str, Any] = Field({}, description="Training hyper-parameter overrides")
    alias: Annotated[str, Field(min_length=1, max_length=100)] | None = Field(
        None, description="Alias the gate moves; default: the slot's adapter_alias, else production")
    contract: str | None = Field(
        None, description="Use only rewards made under this contract (a contract's own "
        "policy always uses its own rewards)")
    backoff_factor: Annotated[float, Field(ge=1.0, le=100.0)] = Field(
        2.0, description="After each consecutive run on the parent whose successor the gate "
        "rejected, automatic rules need this many times more new data (1: no backoff)")
    backoff_wait: str | None = Field(
        None, description="'<n>m|h|d': after a rejected run, wait at least this long before "
        "an automatic rule fires again")
    gate_test: Literal["margin", "bootstrap", "sign"] = Field(
        "margin", description="rollout gate: margin (mean reward beats the parent's by more than "
        "gate_margin), bootstrap (the paired bootstrap interval of the difference lies above "
        "gate_margin) or sign (the exact sign test favours the successor)")
    gate_confidence: Annotated[float, Field(gt=0.5, lt=1.0)] = Field(
        0.95, description="Level of the gate's interval or test")
    gate_resamples: Annotated[int, Field(ge=100, le=100_000)] = Field(
        10_000, description="Resamples of the gate's bootstrap")
    gate_seed: Annotated[int, Field(ge=0)] = Field(0, description="Seed of the gate's bootstrap")
    gate_offline: bool = Field(
        True, description="rollout gate: also measure the offline metric and record it beside")
    gate_probes: Annotated[int, Field(ge=0, le=1024)] | None = Field(
        None, description="Tasks per probe set (the harness's general set, the specialist's "
        "unseen templates and retention set) that parent and successor answer for the "
        "non-inferiority check; "
        "unset: 48 for a rollout gate on the task harness, else 0 (none)")
    gate_probe_margin: Unit = Field(
        0.05, description="Not promoted unless the successor is shown to lose no more than this "
        "on every probe set (the one-sided lower bound at gate_probe_power at or above -margin)")
    gate_probe_power: Annotated[float, Field(gt=0.5, lt=1.0)] = Field(
        0.8, description="Level of that one-sided bound: the chance that a successor truly "
        "losing the margin on a probe set is stopped")

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, text: str | None) -> str | None:
        if text is not None:
            parse_schedule(text)  # raises ValueError with the reason
        return text

    @field_validator("backoff_wait")
    @classmethod
    def _wait(cls, text: str | None) -> str | None:
        if text is not None:
            parse_duration(text)
        return text

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for key, default in LATER_DEFAULTS.items():
            if data.get(key) == default:
                data.pop(key, None)
        return data

    @model_validator(mode="after")
    def _fires(self) -> TriggerPolicy:
        never = self.min_new_rewards is None and self.reward_floor is None and not self.schedule
        if self.enabled and never:
            raise ValueError("an enabled policy needs min_new_rewards, reward_floor or schedule")
        return self

    def tolerance_for(self, criterion_id: str) -> float | None:
        """Allowed drop of a criterion's held-out mean; None: that criterion is not gated."""
        return self.regression_tolerance.get(criterion_id, self.regression_tolerance.get("*"))


LATER_DEFAULTS: dict[str, Any] = {
    "gate_metric": "offline", "rollout_max_new_tokens": 24, "rollout_harness": "text",
    "rollout_prompts": 32, "dataset": "all", "base_model": None, "hyper": {}, "alias": None,
    "contract": None, "backoff_factor": 2.0, "backoff_wait": None, "gate_test": "margin",
    "gate_confidence": 0.95, "gate_resamples": 10_000, "gate_seed": 0, "gate_offline": True,
    "gate_probes": None, "gate_probe_margin": 0.05, "gate_probe_power": 0.8,
}
DISABLED = TriggerPolicy(enabled=False)  # no policy anywhere: only manual triggers
