"""The gate's non-inferiority check: forgetting, measured and gated. Pure (no torch).

A successor is compared with its parent on its own held-out tasks, and that alone would
promote one that got better at its family while getting worse at everything else. So
every gate that has probe sets also has both models answer them:

- ``general``: a general instruction set built into the harness (short answers with one
  right content, disjoint from every specialist's family);
- ``unseen_templates``: the specialist's task templates held out whole, never trained
  on (unseen shapes, not only unseen instances).

Each case scores the check's credit in [0, 1] (and pass/fail beside it). The successor
is **not promoted when its loss on a set exceeds the margin with confidence**: when the
upper end of the paired bootstrap interval of (successor - parent) at the gate's
confidence lies below ``-margin``. A set where the interval reaches above ``-margin`` is
"no evidence of a loss larger than the margin" and passes; its figures are recorded
either way. The harness that answers probe sets is registered by the composition root
(``register_probes``); without one, a gate records that it had none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from trainer.gate.rollout import RolloutTarget
from trainer.gate.stats import paired_bootstrap

GENERAL, UNSEEN = "general", "unseen_templates"
PER_CASE = ("cases", "scores", "passes", "answers", "groups")


@dataclass(frozen=True)
class ProbeMetrics:
    """One model on one probe set, per case in case order."""

    name: str
    cases: tuple[str, ...]  # task ids
    scores: tuple[float, ...]  # the check's credit
    passes: tuple[bool, ...]
    answers: tuple[str, ...] = field(repr=False)
    groups: tuple[str, ...] = ()
    reused_from: str | None = None

    @property
    def n(self) -> int:
        return len(self.cases)

    @property
    def mean(self) -> float:
        return sum(self.scores) / len(self.scores) if self.scores else 0.0

    @property
    def pass_rate(self) -> float:
        return sum(self.passes) / len(self.passes) if self.passes else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "n": self.n, "mean": self.mean, "pass_rate": self.pass_rate}


# (specialist, the model to answer with, tasks per set, answers to reuse by set name, or
# None) -> each probe set's metrics
ProbeRunner = Callable[[str, RolloutTarget, int, Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]]],
                       dict[str, ProbeMetrics]]
_RUNNER: list[ProbeRunner] = []


def register_probes(runner: ProbeRunner) -> None:
    """The harness that answers probe sets (the composition root registers the task harness)."""
    _RUNNER[:] = [runner]


def probe_runner() -> ProbeRunner | None:
    return _RUNNER[0] if _RUNNER else None


def reusable_answers(parent_gate: Mapping[str, Any] | None, target: RolloutTarget
                     ) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """The parent's probe answers from its own gate (where it was the successor), by set:
    (case ids, answers). Greedy answers with the same weights, token budget and precision
    are the same; the runner reuses them only for exactly the same cases."""
    record = (parent_gate or {}).get("non_inferiority") or {}
    if record.get("precision", "auto") != target.precision:
        return {}
    found = {}
    for name, row in (record.get("sets") or {}).items():
        mine = row.get("successor") or {}
        if mine.get("cases") and len(mine.get("answers") or []) == len(mine["cases"]):
            found[name] = (tuple(mine["cases"]), tuple(mine["answers"]))
    return found


def judge_probes(successor: Mapping[str, ProbeMetrics], parent: Mapping[str, ProbeMetrics],
                 margin: float, confidence: float, resamples: int, seed: int,
                 precision: str = "auto") -> tuple[dict[str, Any], list[str]]:
    """(the record, why not promoted) over every set both models answered."""
    sets: dict[str, Any] = {}
    failures: list[str] = []
    for name in sorted(set(successor) & set(parent)):
        ours, theirs = successor[name], parent[name]
        if ours.cases != theirs.cases or not ours.cases:
            sets[name] = {"ok": True, "note": "not compared: the two answered different cases"}
            continue
        interval = paired_bootstrap(ours.scores, theirs.scores, level=confidence,
                                    resamples=resamples, seed=seed)
        ok = interval.high >= -margin
        sets[name] = {"n": ours.n, "ok": ok, "interval": interval.to_dict(),
                      "delta": ours.mean - theirs.mean,
                      "mean": {"successor": ours.mean, "parent": theirs.mean},
                      "pass_rate": {"successor": ours.pass_rate, "parent": theirs.pass_rate},
                      "successor": ours.to_dict(), "parent": theirs.to_dict()}
        if not ok:
            failures.append(f"{name}: the successor loses {-interval.mean:.3f} to its parent, "
                            f"{confidence:.0%} interval [{interval.low:+.3f}, {interval.high:+.3f}] "
                            f"entirely below -{margin} (non-inferiority margin)")
    record = {"margin": margin, "confidence": confidence, "precision": precision,
              "ok": not failures, "sets": sets}
    return record, failures


def summary(record: Mapping[str, Any]) -> dict[str, Any]:
    """The record without its per-case fields (the gate record's summary)."""
    sets = {}
    for name, row in (record.get("sets") or {}).items():
        sides = {side: {k: v for k, v in (row.get(side) or {}).items() if k not in PER_CASE}
                 for side in ("successor", "parent") if side in row}
        sets[name] = {**row, **sides}
    return {**record, "sets": sets}
