"""The promotion decision under a specialist's gate policy. Pure (no torch).

``judge`` is the offline metric's rule: the successor's held-out log-likelihood margin
must beat the parent's by more than the policy's margin (a tie never promotes: a
successor must be measurably better, not merely no worse), both must be measured on the
same held-out set, and each gated criterion's margin may drop at most its tolerance.
``judge_rollouts`` is the decision for the rollout metric (contract reward of generated
answers), by the policy's ``test``: the mean beats the parent's by more than the margin,
or, with per-case rewards, the paired bootstrap interval lies above the margin, or the
exact sign test favours the successor (``gate.stats``). A contract names a tolerance
per criterion (``"*"`` for the rest; a criterion it does not name is not gated). A
criterion the parent could not be measured on (no pair of different scores in the
held-out set) cannot regress and says so.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping

from trainer.gate.policy import GatePolicy
from trainer.gate.rollout import RolloutMetrics
from trainer.gate.shapes import (
    Comparison,
    CriterionRow,
    GateJson,
    PairedStats,
    Power,
    ProbeRecord,
    Verdict,
)
from trainer.gate.stats import paired_bootstrap, power_of_gain, sign_test
from trainer.ml.metrics import GateMetrics


def judge(successor: GateMetrics, parent: GateMetrics, policy: GatePolicy) -> Verdict:
    """{"promote", "reason", "comparison"}: promote iff the margin rule and every gated
    criterion pass."""
    failures: list[str] = []
    if successor.heldout_sha256 != parent.heldout_sha256:
        failures.append("successor and parent were measured on different held-out sets")
    delta = successor.heldout_margin - parent.heldout_margin
    margin_ok = math.isfinite(delta) and delta > policy.margin
    if not margin_ok:
        failures.append(f"held-out margin {successor.heldout_margin:.4f} is not more than "
                        f"{policy.margin} above the parent's {parent.heldout_margin:.4f}")
    criteria, criterion_failures = _criteria(successor.per_criterion, parent.per_criterion, policy)
    comparison: Comparison = {
        "heldout_margin": {"successor": _finite(successor.heldout_margin),
                           "parent": _finite(parent.heldout_margin), "delta": _finite(delta),
                           "required": policy.margin, "ok": margin_ok},
        "n_pairs": successor.n_pairs, "pairing": successor.pairing,
        "criteria": criteria, "tolerances": dict(policy.regression_tolerance),
    }
    failures += criterion_failures
    if failures:
        return {"promote": False, "reason": "; ".join(failures), "comparison": comparison}
    return {"promote": True, "comparison": comparison,
            "reason": f"held-out margin {successor.heldout_margin:.4f} vs parent "
                      f"{parent.heldout_margin:.4f} ({delta:+.4f} > {policy.margin:+g}); "
                      "no gated criterion regressed"}


def judge_rollouts(successor: RolloutMetrics, parent: RolloutMetrics,
                   policy: GatePolicy) -> Verdict:
    """{"promote", "reason", "comparison", "test", "interval", "samples", "seed", ...} on the
    rollout reward (errors score 0). The paired bootstrap interval and the sign test are
    computed whenever both sides have per-case rewards on the same cases, and recorded;
    ``policy.test`` says which decides. A tie, or an interval that reaches the margin,
    never promotes."""
    delta = successor.mean_reward - parent.mean_reward
    paired = bool(successor.rewards) and successor.cases == parent.cases \
        and len(successor.rewards) == len(parent.rewards)
    stats: PairedStats = _paired_stats(successor, parent, policy) if paired else {}
    ok, why = _decides(policy, successor.mean_reward, parent.mean_reward, stats,
                       successor.n == parent.n > 0)
    criteria, criterion_failures = _criteria(successor.per_criterion, parent.per_criterion, policy)
    comparison: Comparison = {
        "rollout_reward": {"successor": successor.mean_reward, "parent": parent.mean_reward,
                           "delta": delta, "required": policy.margin, "ok": ok,
                           "interval": stats.get("interval")},
        "n_rollouts": successor.n, "errors": {"successor": successor.errors, "parent": parent.errors},
        "criteria": criteria, "tolerances": dict(policy.regression_tolerance),
    }
    failures = ([] if ok else [why]) + criterion_failures
    if failures:
        return {"promote": False, "reason": "; ".join(failures), "comparison": comparison,
                "test": policy.test, **stats}
    return {"promote": True, "comparison": comparison, "test": policy.test, **stats,
            "reason": f"{why} over {successor.n} held-out prompts; no gated criterion regressed"}


def _paired_stats(successor: RolloutMetrics, parent: RolloutMetrics,
                  policy: GatePolicy) -> PairedStats:
    interval = paired_bootstrap(successor.rewards, parent.rewards, level=policy.confidence,
                                resamples=policy.resamples, seed=policy.seed)
    sign = sign_test(successor.rewards, parent.rewards)
    diffs = [a - b for a, b in zip(successor.rewards, parent.rewards, strict=True)]
    sd = statistics.stdev(diffs) if len(diffs) > 1 else 0.0
    # The chance this set shows a true gain of the probe margin (the smallest change the
    # gate declares it cares about), at the spread of differences it measured.
    power: Power = {"gain": policy.probe_margin, "sd": sd, "n": len(diffs),
                    "value": power_of_gain(sd, len(diffs), policy.probe_margin + policy.margin,
                                           policy.confidence)}
    return {"interval": interval.to_dict(), "samples": interval.n, "seed": policy.seed,
            "sign_test": sign.to_dict(), "power": power}


def with_power(record: GateJson, policy: GatePolicy) -> GateJson:
    """The record with ``power`` stated whatever decided it: the held-out test's chance of
    showing a true gain of the probe margin (``value``; None, and why, where the decision
    had no per-case test), and ``probes``: the forgetting check's power at its margin (None,
    and why, where no probe set was judged), so a reader sees what the gate could not see."""
    power: Power = {**(record.get("power") or {"value": None, "note": _no_test(record, policy)})}
    probes: ProbeRecord = record.get("non_inferiority") or {}
    power["probes"] = probes.get("power") if probes.get("sets") else None
    if power["probes"] is None:
        power["probes_note"] = probes.get("note") or (
            "no probe set judged (probe_tasks = 0): a loss beyond the held-out set is not checked")
    return {**record, "power": power}


def _no_test(record: GateJson, policy: GatePolicy) -> str:
    if not record.get("comparison"):
        return "nothing was compared"
    if policy.metric == "offline":
        return "the offline metric's margin has no per-case test"
    return "no per-case rewards on the same cases for both models"


def _decides(policy: GatePolicy, ours: float, theirs: float, stats: PairedStats,
             same_n: bool) -> tuple[bool, str]:
    """(passes, why) under the policy's test."""
    delta = ours - theirs
    mean = f"rollout reward {ours:.4f} vs parent {theirs:.4f}"
    if policy.test == "margin":
        ok = same_n and delta > policy.margin
        return ok, (f"{mean} ({delta:+.4f} > {policy.margin:+g})" if ok else
                    f"rollout reward {ours:.4f} is not more than {policy.margin} above the "
                    f"parent's {theirs:.4f}")
    if not stats:
        return False, f"{policy.test} test needs per-case rewards on the same cases for both models"
    if policy.test == "bootstrap":
        interval = stats["interval"]
        ok = interval["low"] > policy.margin
        return ok, (f"{mean}, {interval['level']:.0%} paired bootstrap interval "
                    f"[{interval['low']:+.4f}, {interval['high']:+.4f}] "
                    f"{'lies above' if ok else 'does not lie above'} {policy.margin}")
    sign = stats["sign_test"]
    ok = (sign["wins"] > sign["losses"] and sign["p_value"] < 1 - policy.confidence
          and delta > policy.margin)
    return ok, (f"{mean}, sign test {sign['wins']} wins / {sign['losses']} losses, "
                f"p={sign['p_value']:.3g} {'<' if ok else 'not <'} {1 - policy.confidence:.3g}")


def _criteria(successor: Mapping[str, float], parent: Mapping[str, float],
              policy: GatePolicy) -> tuple[dict[str, CriterionRow], list[str]]:
    rows: dict[str, CriterionRow] = {}
    failures: list[str] = []
    for name in sorted(parent):
        row, failure = _criterion(name, successor.get(name), parent[name], policy.tolerance_for(name))
        rows[name] = row
        failures += [failure] if failure else []
    return rows, failures


def _criterion(name: str, successor: float | None, parent: float,
               tolerance: float | None) -> tuple[CriterionRow, str | None]:
    if tolerance is None or not math.isfinite(parent):
        return {"successor": _finite(successor), "parent": _finite(parent), "tolerance": tolerance,
                "gated": tolerance is not None, "ok": True,
                "note": "not gated" if tolerance is None else "parent not measurable on this set"
                }, None
    ok = successor is not None and math.isfinite(successor) and successor >= parent - tolerance
    row: CriterionRow = {"successor": _finite(successor), "parent": _finite(parent),
                         "tolerance": tolerance, "gated": True, "ok": ok}
    failure = None if ok else (f"criterion {name!r} regressed: {_figure(successor)} < "
                               f"{parent:.4f} - {tolerance:g}")
    return row, failure


def _figure(value: float | None) -> str:
    return "none" if value is None else f"{value:.4f}"


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None
