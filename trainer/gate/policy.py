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

    def tolerance_for(self, criterion: str) -> float | None:
        return self.regression_tolerance.get(criterion, self.regression_tolerance.get("*"))
