"""`hcp demo --seeds`: does learning compound, and does anything get lost on the way?

``compounding``: each generation's production adapter against the one before on the
evaluation set no gate saw (the same tasks in every seed), paired by task: per task, the
change in its pass (0 or 1) averaged over the seeds, and a percentile bootstrap interval
of the mean of those over the tasks (seeded). An interval above 0 says the later
generation solves more of a fresh set than the earlier one, on average over the seeds;
each seed's own change is listed beside it, so the spread is seen.

``losses``: per probe set (the general set, the unseen templates, the retention set), the
change of the production adapter's credit at each generation and against the base, per
seed, and the largest loss, against the gates' margin.
"""

from __future__ import annotations

from collections.abc import Sequence

from cli.demo_shapes import Compounding, DemoReport, Loss
from trainer.gate.stats import paired_bootstrap

LEVEL, RESAMPLES = 0.95, 10_000
PROBE_SETS = ("general", "unseen_templates", "retention")


def compounding(reports: Sequence[DemoReport], specialist: str) -> list[Compounding]:
    """One row per generation g >= 1: g against g - 1 on the evaluation set."""
    runs = [((r["specialists"].get(specialist) or {}).get("evaluation") or {})
            .get("passes_by_generation") for r in reports]
    if not runs or any(not run for run in runs):
        return []
    rows: list[Compounding] = []
    for g in range(1, min(len(run) for run in runs if run)):
        per_task = [sum(run[g][i] - run[g - 1][i] for run in runs if run) / len(runs)
                    for i in range(len(runs[0][0]))]  # type: ignore[index]
        interval = paired_bootstrap(per_task, [0.0] * len(per_task), level=LEVEL,
                                    resamples=RESAMPLES, seed=0)
        seeds = [sum(run[g]) / len(run[g]) - sum(run[g - 1]) / len(run[g - 1])
                 for run in runs if run]
        rows.append({"generation": g, "versus": g - 1, "n_tasks": len(per_task),
                     "seeds": len(seeds), "mean": interval.mean, "interval": interval.to_dict(),
                     "per_seed": seeds, "above_zero": interval.low > 0})
    return rows


def losses(reports: Sequence[DemoReport], specialist: str, margin: float) -> dict[str, Loss]:
    """Per probe set: each seed's production credit change per generation and against the
    base, the worst of each, and whether any went beyond ``-margin``."""
    found: dict[str, Loss] = {}
    for name in PROBE_SETS:
        series = [_credit(r, specialist, name) for r in reports]
        if not series or any(not s for s in series):
            continue
        steps = [[s[g] - s[g - 1] for g in range(1, len(s))] for s in series if s]
        versus_base = [[s[g] - s[0] for g in range(1, len(s))] for s in series if s]
        worst_step = min(min(s) for s in steps) if steps and all(steps) else 0.0
        worst_base = min(min(s) for s in versus_base) if versus_base and all(versus_base) else 0.0
        found[name] = {"step_by_seed": steps, "versus_base_by_seed": versus_base,
                       "worst_step": worst_step, "worst_versus_base": worst_base,
                       "beyond_margin": worst_step < -margin, "margin": margin}
    return found


def _credit(report: DemoReport, specialist: str, probe_set: str) -> list[float] | None:
    probes = (report["specialists"].get(specialist) or {}).get("probes_by_generation") or {}
    found = probes.get(probe_set)
    return found.get("credit_by_generation") if found else None
