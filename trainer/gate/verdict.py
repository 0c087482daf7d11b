"""The gate record, typed: what a gate decided and what it saw, from the decision to the
adapter's row and its ``adapter.registered`` event. Pure.

A frozen model over the JSON the registry stores (``metrics.gate``): the fields a reader
acts on are typed, every other field is kept as it was given (``extra="allow"``), and
``to_json`` gives back exactly the dictionary it was made from (``exclude_unset``: no
default is added, no field dropped), so records stored before these types existed read
the same and the audit's comparison of a stored record with its event is unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class Interval(_Record):
    mean: float | None = None
    low: float | None = None
    high: float | None = None
    level: float | None = None
    n: int | None = None


class RolloutSide(_Record):
    """One model's rollouts (``gate.rollout.RolloutMetrics.to_dict``)."""

    mean_reward: float | None = None
    n: int = 0
    cases: list[str] = []
    answers: list[str] = []
    rewards: list[float] = []
    reused_from: str | None = None
    memo: dict[str, Any] | None = None


class Rollouts(_Record):
    successor: RolloutSide | None = None
    parent: RolloutSide | None = None
    harness: str | None = None
    max_new_tokens: int | None = None
    precision: str = "auto"


class ProbeSide(_Record):
    """One model on one probe set (``gate.probes.ProbeMetrics.to_dict``)."""

    cases: list[str] = []
    answers: list[str] = []
    scores: list[float] = []
    memo: dict[str, Any] | None = None


class ProbeSet(_Record):
    ok: bool = True
    note: str | None = None
    successor: ProbeSide | None = None
    parent: ProbeSide | None = None


class NonInferiority(_Record):
    ok: bool = True
    note: str | None = None
    precision: str = "auto"
    sets: dict[str, ProbeSet] = {}


class GateRecord(_Record):
    promote: bool
    reason: str
    metric: str | None = None
    test: str | None = None
    interval: Interval | None = None
    rollouts: Rollouts | None = None
    non_inferiority: NonInferiority | None = None

    @classmethod
    def of(cls, stored: Mapping[str, Any] | None) -> GateRecord | None:
        """A stored record (None: none, e.g. a root version's parent)."""
        return cls.model_validate(stored) if stored else None

    def to_json(self) -> dict[str, Any]:
        """The record as stored: exactly what it was made from."""
        return self.model_dump(exclude_unset=True)
