"""How a successor is judged against its parent, and what happens when it passes.

Resolved from a trigger policy (``contract.policy.TriggerPolicy``) when the run is
queued, and stored with the run, so a run is gated by the rule in force when it fired.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class GatePolicy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    margin: float = Field(0.0, description="What the successor must gain over its parent")
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
                                 description="Registered rollout harness (trainer.gate.rollout)")
    rollout_max_new_tokens: int = Field(24, ge=1, le=1024, description="Tokens generated per prompt")
    rollout_prompts: int = Field(32, ge=1, le=1024,
                                 description="At most this many held-out subjects (the latest)")
    test: Literal["margin", "bootstrap", "sign"] = Field(
        "margin", description="rollout only. margin: the mean reward must beat the parent's by "
        "more than `margin`; bootstrap: the paired bootstrap interval of the difference must lie "
        "above `margin`; sign: the exact sign test (McNemar's for pass/fail) must favour the "
        "successor at `confidence`, and the mean beat the parent's by more than `margin`")
    confidence: float = Field(0.95, gt=0.5, lt=1.0, description="Level of the interval / test")
    resamples: int = Field(10_000, ge=100, le=100_000, description="Bootstrap resamples")
    seed: int = Field(0, ge=0, description="Seed of the bootstrap's resampling")
    offline_beside: bool = Field(True, description="rollout only: also measure and record the "
                                 "offline metric (a pass over the held-out set with each model)")
    probe_tasks: int = Field(0, ge=0, le=1024, description="Tasks per probe set (the general "
                             "set, the unseen templates) both models answer for the "
                             "non-inferiority check (trainer.gate.probes); 0: none")
    probe_margin: float = Field(0.05, ge=0.0, le=1.0, description="Not promoted unless the "
                                "successor is shown to lose no more than this on every probe set")
    probe_power: float = Field(0.8, gt=0.5, lt=1.0, description="Level of the one-sided lower "
                               "bound the probe check needs above -probe_margin: the chance of "
                               "stopping a successor that truly loses the margin")

    def tolerance_for(self, criterion: str) -> float | None:
        return self.regression_tolerance.get(criterion, self.regression_tolerance.get("*"))
