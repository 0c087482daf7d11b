"""The promotion decision under a specialist's gate policy. Pure (no torch).

``trainer.ml.gate.decide_promotion`` judges the held-out margin (and rollouts) with one
tolerance; a contract names a tolerance per criterion (``"*"`` for the rest, and a
criterion it does not name is not gated), so the criteria are judged here, each
against its own tolerance. A criterion the parent could not be measured on (no pair of
different scores in the held-out set) cannot regress and is reported as such.

``judge_rollouts`` is the same decision for the rollout metric: the successor's mean
contract reward on the held-out prompts must beat the parent's by more than the margin
(a tie never promotes), and each gated criterion's mean may drop at most its tolerance.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from trainer.ml.gate import GateMetrics, decide_promotion
from trainer.policy import GatePolicy
from trainer.rollout import RolloutMetrics


def judge(successor: GateMetrics, parent: GateMetrics, policy: GatePolicy) -> dict[str, Any]:
    """{"promote", "reason", "comparison"}: promote iff the margin rule and every gated
    criterion pass."""
    overall = decide_promotion(replace(successor, per_criterion={}), replace(parent, per_criterion={}),
                               margin=policy.margin, tolerance=policy.tolerance_for("*") or 0.0)
    failures = [] if overall.promote else [overall.reason]
    criteria: dict[str, Any] = {}
    for name in sorted(parent.per_criterion):
        row, failure = _criterion(name, successor.per_criterion.get(name),
                                  parent.per_criterion[name], policy.tolerance_for(name))
        criteria[name] = row
        failures += [failure] if failure else []
    comparison = {**overall.comparison, "criteria": criteria,
                  "tolerances": dict(policy.regression_tolerance)}
    if failures:
        return {"promote": False, "reason": "; ".join(failures), "comparison": comparison}
    return {"promote": True, "reason": overall.reason.split(";")[0] + "; no gated criterion regressed",
            "comparison": comparison}


def judge_rollouts(successor: RolloutMetrics, parent: RolloutMetrics,
                   policy: GatePolicy) -> dict[str, Any]:
    """{"promote", "reason", "comparison"} on the rollout reward (errors score 0)."""
    delta = successor.mean_reward - parent.mean_reward
    margin_ok = successor.n == parent.n > 0 and delta > policy.margin
    failures = [] if margin_ok else [
        f"rollout reward {successor.mean_reward:.4f} is not more than {policy.margin} above "
        f"the parent's {parent.mean_reward:.4f}"]
    criteria: dict[str, Any] = {}
    for name in sorted(parent.per_criterion):
        row, failure = _criterion(name, successor.per_criterion.get(name),
                                  parent.per_criterion[name], policy.tolerance_for(name))
        criteria[name] = row
        failures += [failure] if failure else []
    comparison = {
        "rollout_reward": {"successor": successor.mean_reward, "parent": parent.mean_reward,
                           "delta": delta, "required": policy.margin, "ok": margin_ok},
        "n_rollouts": successor.n, "errors": {"successor": successor.errors, "parent": parent.errors},
        "criteria": criteria, "tolerances": dict(policy.regression_tolerance),
    }
    if failures:
        return {"promote": False, "reason": "; ".join(failures), "comparison": comparison}
    return {"promote": True, "comparison": comparison,
            "reason": f"rollout reward {successor.mean_reward:.4f} vs parent {parent.mean_reward:.4f} "
                      f"(+{delta:.4f} > {policy.margin}) over {successor.n} held-out prompts; "
                      "no gated criterion regressed"}


def _criterion(name: str, successor: float | None, parent: float,
               tolerance: float | None) -> tuple[dict[str, Any], str | None]:
    row: dict[str, Any] = {"successor": _finite(successor), "parent": _finite(parent),
                           "tolerance": tolerance, "gated": tolerance is not None}
    if tolerance is None or not math.isfinite(parent):
        row["ok"] = True
        row["note"] = "not gated" if tolerance is None else "parent not measurable on this set"
        return row, None
    ok = successor is not None and math.isfinite(successor) and successor >= parent - tolerance
    row["ok"] = ok
    failure = None if ok else f"criterion {name!r} regressed: {successor} < {parent} - {tolerance}"
    return row, failure


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None
