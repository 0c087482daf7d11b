"""The gate record's JSON as the gate builds it, part by part, before ``verdict.GateRecord``
reads it back. Pure: types only.

Key order is the order the builders write (the record is stored and hashed as written).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Required, TypedDict

from trainer.gate.stats import IntervalJson, NonInferiorityJson, SignTestJson


class Pair(TypedDict):
    successor: float | None
    parent: float | None


class Means(TypedDict):
    successor: float
    parent: float


class MemoProvenance(TypedDict):
    """Where a record's answers came from (``inference.memo.provenance``): how many the
    answer memo gave, how many were generated, the digest of their keys in case order."""

    reused: int
    generated: int
    keys_sha256: str


class CriterionRow(TypedDict, total=False):
    successor: Required[float | None]
    parent: Required[float | None]
    tolerance: Required[float | None]
    gated: Required[bool]
    ok: Required[bool]
    note: str  # why it was not gated


class MarginRow(TypedDict):
    """The offline metric's held-out margin, both models."""

    successor: float | None
    parent: float | None
    delta: float | None
    required: float
    ok: bool


class RewardRow(TypedDict):
    """The rollout metric's mean reward, both models."""

    successor: float
    parent: float
    delta: float
    required: float
    ok: bool
    interval: IntervalJson | None


class Errors(TypedDict):
    successor: int
    parent: int


class Comparison(TypedDict, total=False):
    """What was compared: the offline margin or the rollout reward, and every criterion."""

    heldout_margin: MarginRow
    n_pairs: int
    pairing: str
    rollout_reward: RewardRow
    n_rollouts: int
    errors: Errors
    criteria: dict[str, CriterionRow]
    tolerances: dict[str, float]


class Power(TypedDict, total=False):
    """The held-out test's chance of showing a true gain of ``gain`` (``value``), and the
    probe sets' (``probes``); a note where there was no test."""

    gain: float
    sd: float
    n: int
    value: float | None
    note: str
    probes: float | None
    probes_note: str


class PairedStats(TypedDict, total=False):
    """The per-case statistics (empty without per-case rewards on the same cases)."""

    interval: IntervalJson
    samples: int
    seed: int
    sign_test: SignTestJson
    power: Power


class ProbeSide(TypedDict):
    """One model on one probe set (``probes.ProbeMetrics.to_dict``)."""

    name: str
    cases: tuple[str, ...]
    scores: tuple[float, ...]
    passes: tuple[bool, ...]
    answers: tuple[str, ...]
    groups: tuple[str, ...]
    reused_from: str | None
    memo: MemoProvenance | None
    n: int
    mean: float
    pass_rate: float


class ProbeSet(TypedDict, total=False):
    """One probe set judged (or why not: ``note``)."""

    n: int
    ok: Required[bool]
    note: str
    interval: IntervalJson
    non_inferiority: NonInferiorityJson
    power: float
    pass_if_equal: float
    delta: float
    mean: Means
    pass_rate: Means
    successor: ProbeSide
    parent: ProbeSide


class ProbeRecord(TypedDict, total=False):
    """The non-inferiority check over the probe sets (``probes.judge_probes``)."""

    margin: float
    confidence: float
    power: float
    rule: str
    precision: str
    ok: bool
    note: str
    sets: dict[str, ProbeSet]


class Verdict(TypedDict, total=False):
    """A decision (``decision.judge``, ``decision.judge_rollouts``)."""

    promote: Required[bool]
    reason: Required[str]
    comparison: Required[Comparison]
    test: str
    interval: IntervalJson
    samples: int
    seed: int
    sign_test: SignTestJson
    power: Power


class GroupRow(TypedDict):
    """Mean reward and pass rate of one template group, both models."""

    n: int
    successor: float | None
    parent: float | None
    pass_rate: Pair


class Rollouts(TypedDict):
    """Each side's ``RolloutMetrics.to_dict`` and the settings both were generated under."""

    successor: Mapping[str, object]
    parent: Mapping[str, object]
    harness: str
    max_new_tokens: int
    precision: str
    logged_mean_reward: float  # what the logged answers were rewarded, for scale


class Setting(TypedDict, total=False):
    """What the gate measured with: its metric, whether the parent is the base, how many
    held-out examples."""

    metric: str
    parent_is_base: bool
    held_out: int


class GateJson(Verdict, Setting, total=False):
    """The whole record the gate writes (``heldout.Gate.judge``)."""

    # GateMetrics.to_dict (the offline figures), or the rollout figures alone
    successor: Mapping[str, object]
    parent: Mapping[str, object]
    rollouts: Rollouts
    offline: Verdict | None
    pass_rate: Pair
    by_group: dict[str, GroupRow]
    non_inferiority: ProbeRecord
