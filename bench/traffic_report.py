"""The figures of bench/traffic.py: held-out users' success per generation with 95%
intervals, the change against the base (paired), the judge's agreement with the users'
own checkers, and each successor's gate (with its probe sets' non-inferiority)."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

Z95 = 1.959963984540054


def wilson(successes: int, n: int) -> tuple[float, float]:
    """The Wilson score interval of a proportion at 95%."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    centre = (p + Z95 ** 2 / (2 * n)) / (1 + Z95 ** 2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95 ** 2 / (4 * n * n)) / (1 + Z95 ** 2 / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def paired_interval(before: Sequence[bool], after: Sequence[bool], seed: int = 0,
                    resamples: int = 10_000) -> tuple[float, float, float]:
    """The mean of after - before over the same users, with its 95% percentile bootstrap."""
    diffs = [int(a) - int(b) for a, b in zip(after, before, strict=True)]
    if not diffs:
        return (0.0, 0.0, 0.0)
    rng = random.Random(seed)
    means = sorted(sum(rng.choice(diffs) for _ in diffs) / len(diffs) for _ in range(resamples))
    return (sum(diffs) / len(diffs), means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1])


def generations(talks: Sequence[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """Per generation, the held-out users' first answers judged by their own checkers."""
    rows = []
    base = _held(talks, 0)
    for g in range(count + 1):
        held = _held(talks, g)
        passed = sum(t["passed"] for t in held)
        low, high = wilson(passed, len(held))
        row = {"generation": g, "users": len(held), "passed": passed,
               "success": passed / len(held) if held else None, "ci95": [low, high],
               "adapters": sorted({t["adapter_version"] for t in held}),
               "by_kind": _by_kind(held)}
        if g > 0 and [t["user_id"] for t in held] == [t["user_id"] for t in base]:
            mean, lo, hi = paired_interval([t["passed"] for t in base], [t["passed"] for t in held], g)
            row["vs_base"] = {"difference": mean, "ci95": [lo, hi]}
        rows.append(row)
    return rows


def _held(talks: Sequence[dict[str, Any]], g: int) -> list[dict[str, Any]]:
    return sorted((t for t in talks if t["side"] == "held_out" and t["generation"] == g),
                  key=lambda t: t["user_id"])


def _by_kind(held: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out = {}
    for kind in sorted({t["kind"] for t in held}):
        some = [t for t in held if t["kind"] == kind]
        passed = sum(t["passed"] for t in some)
        out[kind] = {"users": len(some), "passed": passed, "ci95": list(wilson(passed, len(some)))}
    return out


def agreement(pairs: Sequence[tuple[bool, float | None]]) -> dict[str, Any]:
    """The judge against the users' checkers, on the answers both judged: a verdict of at
    least 0.5 on its scale read as "good"; Cohen's kappa beside the raw agreement."""
    read = [(passed, score) for passed, score in pairs if score is not None]
    if not read:
        return {"answers": len(pairs), "read": 0}
    agree = sum(passed == (score >= 0.5) for passed, score in read)
    n = len(read)
    p_pass = sum(p for p, _ in read) / n
    p_good = sum(s >= 0.5 for _, s in read) / n
    chance = p_pass * p_good + (1 - p_pass) * (1 - p_good)
    observed = agree / n
    kappa = (observed - chance) / (1 - chance) if chance < 1 else 0.0
    mean_pass = _mean([s for p, s in read if p])
    mean_fail = _mean([s for p, s in read if not p])
    return {"answers": len(pairs), "read": n, "unreadable": len(pairs) - n,
            "agreement": observed, "ci95": list(wilson(agree, n)), "kappa": kappa,
            "judge_says_good": p_good, "users_say_good": p_pass,
            "mean_score_when_users_pass": mean_pass, "mean_score_when_users_fail": mean_fail}


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def markdown(report: dict[str, Any]) -> str:
    """The report as the tables docs/traffic.md shows: success per generation, the judge,
    each run's gate and probe sets, the audit."""
    return "\n\n".join([_generations_table(report["generations"]), _judge_line(report["judge"]),
                        _runs_table(report["runs"]), _audit_line(report["audit"])])


def _generations_table(rows: Sequence[dict[str, Any]]) -> str:
    lines = ["| generation | adapter | held-out users | success | 95% interval | vs base (paired, 95%) |",
             "| --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        vs = row.get("vs_base")
        vs_text = f"{vs['difference']:+.3f} [{vs['ci95'][0]:+.3f}, {vs['ci95'][1]:+.3f}]" if vs else "-"
        success = "-" if row["success"] is None else f"{row['success']:.3f}"
        lines.append(f"| {row['generation']} | {', '.join(row['adapters'])} | {row['users']} | "
                     f"{success} | [{row['ci95'][0]:.3f}, {row['ci95'][1]:.3f}] | {vs_text} |")
    return "\n".join(lines)


def _judge_line(judge: dict[str, Any]) -> str:
    if not judge.get("read"):
        return f"Judge: no verdict read on {judge.get('answers', 0)} answers."
    means = [judge["mean_score_when_users_pass"], judge["mean_score_when_users_fail"]]
    when = ", ".join("-" if m is None else f"{m:.3f}" for m in means)
    return (f"Judge against the users' checkers: {judge['read']} of {judge['answers']} answers read "
            f"({judge['unreadable']} unreadable); agreement {judge['agreement']:.3f} "
            f"[{judge['ci95'][0]:.3f}, {judge['ci95'][1]:.3f}], kappa {judge['kappa']:+.3f}; "
            f"judge says good {judge['judge_says_good']:.3f}, users {judge['users_say_good']:.3f}; "
            f"mean score when users pass, fail: {when}.")


def _runs_table(runs: Sequence[dict[str, Any]]) -> str:
    lines = ["| after generation | objective | examples, pairs | adapter | status | held-out margin "
             "(successor vs parent) | probe sets (change, one-sided lower bound) |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for run in runs:
        if "adapter" not in run:
            lines.append(f"| {run['generation']} | - | - | - | run {run['run_status']} | "
                         f"{run.get('error') or '-'} | - |")
            continue
        lines.append(f"| {run['generation']} | {run.get('objective')} | {run.get('examples_used')}, "
                     f"{run.get('pairs_used')} | {run['adapter']} | {run['status']} | "
                     f"{_margin(run)} | {_probe_cells(run.get('probes') or {})} |")
    return "\n".join(lines)


def _margin(run: dict[str, Any]) -> str:
    found = (run.get("comparison") or {}).get("heldout_margin")
    if not found:
        return run.get("reason") or "-"
    numbers = [found.get(k) for k in ("successor", "parent", "delta")]
    if any(n is None for n in numbers):
        return "not finite"
    return f"{numbers[0]:+.3f} vs {numbers[1]:+.3f} ({numbers[2]:+.3f})"


def _probe_cells(probes: dict[str, Any]) -> str:
    sets = probes.get("sets") or {}
    if not sets:
        return probes.get("note") or "-"
    cells = []
    for name, row in sorted(sets.items()):
        check = row.get("non_inferiority") or {}
        if row.get("delta") is None:
            cells.append(f"{name}: not compared")
            continue
        verdict = "ok" if check.get("ok") else "loss"
        lower = check.get("lower", float("nan"))
        cells.append(f"{name} n={row.get('n')}: {row['delta']:+.3f} ({lower:+.3f}, {verdict})")
    return "; ".join(cells)


def _audit_line(audit: dict[str, Any]) -> str:
    passed = audit["exit"] == 0
    return "`hcp audit all`: " + ("passed (exit 0)." if passed else f"FAILED (exit {audit['exit']}).")
