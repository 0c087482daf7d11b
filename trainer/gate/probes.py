"""The gate's non-inferiority check: forgetting, measured and gated. Pure (no torch).

A successor is compared with its parent on its own held-out tasks, and that alone would
promote one that got better at its family while getting worse at everything else. So
every gate that has probe sets also has both models answer them:

- ``general``: a general instruction set built into the harness (short answers with one
  right content, disjoint from every specialist's family);
- ``unseen_templates``: the specialist's task templates held out whole, never trained
  on (unseen shapes, not only unseen instances);
- ``retention``: what users ask the specialist beyond every template, which the base
  partly solves (``harness.tasks.retention_*``), so that a loss can show.

Each case scores the check's credit in [0, 1] (and pass/fail beside it). The successor
is **not promoted unless it is shown to be no worse than its parent by more than the
margin**: the one-sided lower bound of the paired bootstrap of (successor - parent) at
the policy's ``probe_power`` (0.8) must lie at or above ``-margin`` (``stats.
non_inferiority``). So a successor that truly loses the margin on a set is stopped with
that probability (the check's power, whatever the set's size), and the set's size
decides how often one that lost nothing passes (``pass_if_equal``, in the record beside
the power). The two-sided interval at the gate's confidence is recorded for reading.
The harness that answers probe sets is registered by the composition root
(``register_probes``); without one, a gate records that it had none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from trainer.gate.rollout import RolloutTarget
from trainer.gate.shapes import MemoProvenance, ProbeRecord, ProbeSet, ProbeSide
from trainer.gate.stats import non_inferiority, paired_bootstrap
from trainer.gate.verdict import GateRecord

GENERAL, UNSEEN, RETENTION = "general", "unseen_templates", "retention"
DEFAULT_POWER = 0.8
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
    # Where the engine's answers came from: {"reused", "generated", "keys_sha256"} (the
    # answer memo's keys in case order, so a replay can regenerate and compare each one).
    memo: MemoProvenance | None = None

    @property
    def n(self) -> int:
        return len(self.cases)

    @property
    def mean(self) -> float:
        return sum(self.scores) / len(self.scores) if self.scores else 0.0

    @property
    def pass_rate(self) -> float:
        return sum(self.passes) / len(self.passes) if self.passes else 0.0

    def to_dict(self) -> ProbeSide:
        return {"name": self.name, "cases": self.cases, "scores": self.scores,
                "passes": self.passes, "answers": self.answers, "groups": self.groups,
                "reused_from": self.reused_from,
                "memo": None if self.memo is None else {**self.memo},
                "n": self.n, "mean": self.mean, "pass_rate": self.pass_rate}


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


def reusable_answers(parent_gate: GateRecord | None, target: RolloutTarget
                     ) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """The parent's probe answers from its own gate (where it was the successor), by set:
    (case ids, answers). Greedy answers with the same weights, token budget and precision
    are the same; the runner reuses them only for exactly the same cases."""
    record = parent_gate.non_inferiority if parent_gate is not None else None
    if record is None or record.precision != target.precision:
        return {}
    found = {}
    for name, row in record.sets.items():
        mine = row.successor
        if mine is not None and mine.cases and len(mine.answers) == len(mine.cases):
            found[name] = (tuple(mine.cases), tuple(mine.answers))
    return found


def judge_probes(successor: Mapping[str, ProbeMetrics], parent: Mapping[str, ProbeMetrics],
                 margin: float, confidence: float, resamples: int, seed: int,
                 precision: str = "auto", power: float = DEFAULT_POWER
                 ) -> tuple[ProbeRecord, list[str]]:
    """(the record, why not promoted) over every set both models answered."""
    sets: dict[str, ProbeSet] = {}
    failures: list[str] = []
    for name in sorted(set(successor) & set(parent)):
        ours, theirs = successor[name], parent[name]
        if ours.cases != theirs.cases or not ours.cases:
            sets[name] = {"ok": True, "note": "not compared: the two answered different cases"}
            continue
        check = non_inferiority(ours.scores, theirs.scores, margin=margin, level=power,
                                resamples=resamples, seed=seed)
        interval = paired_bootstrap(ours.scores, theirs.scores, level=confidence,
                                    resamples=resamples, seed=seed)
        sets[name] = {"n": ours.n, "ok": check.ok, "interval": interval.to_dict(),
                      "non_inferiority": check.to_dict(), "power": check.power,
                      "pass_if_equal": check.pass_if_equal, "delta": ours.mean - theirs.mean,
                      "mean": {"successor": ours.mean, "parent": theirs.mean},
                      "pass_rate": {"successor": ours.pass_rate, "parent": theirs.pass_rate},
                      "successor": ours.to_dict(), "parent": theirs.to_dict()}
        if not check.ok:
            failures.append(f"{name}: the successor's change {check.mean:+.3f} has its one-sided "
                            f"{power:.0%} lower bound {check.lower:+.3f} below -{margin} "
                            f"(not shown to be within the non-inferiority margin)")
    record: ProbeRecord = {"margin": margin, "confidence": confidence, "power": power,
              "rule": f"not promoted unless the one-sided {power:.0%} lower bound of (successor "
                      f"- parent) on every set lies at or above -{margin}",
              "precision": precision, "ok": not failures, "sets": sets}
    return record, failures


def summary(record: Mapping[str, Any]) -> dict[str, Any]:
    """The record without its per-case fields (the gate record's summary)."""
    sets = {}
    for name, row in (record.get("sets") or {}).items():
        sides = {side: {k: v for k, v in (row.get(side) or {}).items() if k not in PER_CASE}
                 for side in ("successor", "parent") if side in row}
        sets[name] = {**row, **sides}
    return {**record, "sets": sets}
