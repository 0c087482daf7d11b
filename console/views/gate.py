"""The gate record of an adapter version (``metrics.gate``) as the adapter page shows it.

The record's shape grows as the gate does: today the decision, the headline comparison
(held-out margin or rollout reward: successor, parent, delta, required) and one row per
criterion; a statistical gate adds an interval, its sample count and seed; a gate on the
task harness adds the held-out pass rate and the non-inferiority check (``trainer.gate.
probes``: parent and successor on the general set, the unseen templates and the retention
set, one row per set with its one-sided lower bound, power and chance that a successor that
lost nothing passes; per-case answers left out). Whatever this module does not know by name is still
shown, under "other fields", so new data is never hidden. The record is read as stored, of
any age (``Mapping[str, Any]``: each field is checked before it is used); the views the
page reads are typed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypedDict, TypeGuard

HEADLINES = {"heldout_margin": "held-out margin", "rollout_reward": "rollout reward"}
INTERVAL_KEYS = ("interval", "bootstrap", "confidence_interval", "ci")
SAMPLE_KEYS = ("samples", "n_samples", "sample_count", "n_pairs", "n_rollouts", "held_out")
SEED_KEYS = ("seed", "bootstrap_seed")
PROBE_SETS = {"general": "general instruction set", "unseen_templates": "unseen templates",
              "retention": "retention set"}
_KNOWN = {"promote", "reason", "comparison", "metric", "parent_is_base", "successor", "parent",
          "rollouts", "offline", "pass_rate", "non_inferiority", *INTERVAL_KEYS, *SAMPLE_KEYS,
          *SEED_KEYS}


class PairView(TypedDict):
    parent: float
    successor: float


class HeadlineView(TypedDict):
    name: str
    successor: object
    parent: object
    delta: object
    required: object
    ok: object
    interval: object


class CriterionView(TypedDict):
    name: str
    successor: object
    parent: object
    delta: float | None
    tolerance: object
    gated: object
    own: bool  # the criterion's own tolerance, not the record's default ("*")
    ok: object
    note: object
    interval: object


class ProbeSetView(TypedDict):
    name: str
    n: object
    parent: object
    successor: object
    delta: object
    pass_rate: PairView | None
    interval: object
    lower: object
    pass_if_equal: object
    ok: object
    note: object


class ProbesView(TypedDict):
    ok: object
    margin: object
    confidence: object
    power: object
    note: object
    sets: list[ProbeSetView]


class GateView(TypedDict):
    promote: object
    reason: object
    metric: object
    parent_is_base: object
    headlines: list[HeadlineView]
    criteria: list[CriterionView]
    default_tolerance: float | None
    interval: object
    samples: list[tuple[str, object]]
    seed: object
    pass_rate: PairView | None
    probes: ProbesView | None
    other: dict[str, object]  # every field not known by name


def gate_view(gate: Mapping[str, Any] | None) -> GateView | None:
    """The decision, the headline rows, per-criterion deltas, interval, samples, seed."""
    if not gate:
        return None
    comparison = gate.get("comparison") or {}
    tolerances = comparison.get("tolerances") or {}
    return {
        "promote": gate.get("promote"),
        "reason": rounded(gate.get("reason")),
        "metric": gate.get("metric"),
        "parent_is_base": gate.get("parent_is_base"),
        "headlines": [_headline(name, comparison[name]) for name in HEADLINES
                      if isinstance(comparison.get(name), dict)],
        "criteria": criteria_rows(comparison.get("criteria") or {}, tolerances),
        "default_tolerance": tolerances.get("*") if _number(tolerances.get("*")) else None,
        "interval": _first(INTERVAL_KEYS, gate, comparison),
        "samples": _samples(gate, comparison),
        "seed": _first(SEED_KEYS, gate, comparison),
        "pass_rate": _pair(gate.get("pass_rate")),
        "probes": probes_view(gate.get("non_inferiority")),
        "other": {k: v for k, v in gate.items() if k not in _KNOWN},
    }


# A figure as Python writes a float (0.027970770994822185): the reasons the gate wrote
# before it rounded them are shown rounded, as the tables beside them are.
_LONG_FIGURE = re.compile(r"(?<![\w.])-?\d+\.\d{5,}(?:e-?\d+)?")


def rounded(reason: Any) -> Any:
    """A gate reason with every long figure written to four places."""
    if not isinstance(reason, str):
        return reason
    return _LONG_FIGURE.sub(lambda m: f"{float(m.group()):.4f}", reason)


def criteria_rows(criteria: Mapping[str, Any],
                  tolerances: Mapping[str, object] | None = None) -> list[CriterionView]:
    """One row per criterion: successor, parent, delta, tolerance, gated, ok, note;
    ``own``: the tolerance is the criterion's own (else the record's default, ``*``, which
    the page states once instead of in every row)."""
    tolerances = tolerances or {}
    rows: list[CriterionView] = []
    for name, row in sorted(criteria.items()):
        if not isinstance(row, dict):
            continue
        successor, parent = row.get("successor"), row.get("parent")
        delta = successor - parent if _number(successor) and _number(parent) else None
        rows.append({"name": name, "successor": successor, "parent": parent, "delta": delta,
                     "tolerance": row.get("tolerance"), "gated": row.get("gated"),
                     "own": name in tolerances or "*" not in tolerances,
                     "ok": row.get("ok"), "note": row.get("note", ""),
                     "interval": _first(INTERVAL_KEYS, row)})
    return rows


def probes_view(record: Any) -> ProbesView | None:
    """The non-inferiority check: its margin and confidence, a note when it compared
    nothing, and per probe set: cases, mean credit and pass rate of parent and successor,
    the delta, its interval, the verdict."""
    if not isinstance(record, dict):
        return None
    rows: list[ProbeSetView] = []
    for name, row in sorted((record.get("sets") or {}).items()):
        if not isinstance(row, dict):
            continue
        credit = row.get("mean") or {}
        check = row.get("non_inferiority") or {}
        rows.append({"name": PROBE_SETS.get(name, name.replace("_", " ")), "n": row.get("n"),
                     "parent": credit.get("parent"), "successor": credit.get("successor"),
                     "delta": row.get("delta"), "pass_rate": _pair(row.get("pass_rate")),
                     "interval": row.get("interval"), "lower": check.get("lower"),
                     "pass_if_equal": row.get("pass_if_equal"), "ok": row.get("ok"),
                     "note": row.get("note", "")})
    # records before the power-stated check have no "power": a loss had to be shown then
    return {"ok": record.get("ok"), "margin": record.get("margin"),
            "confidence": record.get("confidence"), "power": record.get("power"),
            "note": record.get("note", ""), "sets": rows}


def _pair(value: Any) -> PairView | None:
    """``{"parent": x, "successor": y}`` when both are numbers."""
    if isinstance(value, dict) and _number(value.get("parent")) and _number(value.get("successor")):
        return {"parent": value["parent"], "successor": value["successor"]}
    return None


def interval_text(interval: Any) -> str:
    """``[low, high] at 95%`` from the shapes an interval may take; else its JSON form."""
    if isinstance(interval, dict):
        low = interval.get("low", interval.get("lower"))
        high = interval.get("high", interval.get("upper"))
        level = interval.get("level", interval.get("confidence"))
        if _number(low) and _number(high):
            text = f"[{low:.4f}, {high:.4f}]"
            return f"{text} at {level:.0%}" if _number(level) and level <= 1 else text
    if isinstance(interval, list | tuple) and len(interval) == 2 and all(map(_number, interval)):
        return f"[{interval[0]:.4f}, {interval[1]:.4f}]"
    return str(interval)


def _headline(name: str, row: Mapping[str, Any]) -> HeadlineView:
    return {"name": HEADLINES.get(name, name.replace("_", " ")), "successor": row.get("successor"),
            "parent": row.get("parent"), "delta": row.get("delta"), "required": row.get("required"),
            "ok": row.get("ok"), "interval": _first(INTERVAL_KEYS, row)}


def _samples(gate: Mapping[str, Any], comparison: Mapping[str, Any]) -> list[tuple[str, object]]:
    return [(key.replace("_", " "), source[key]) for source in (gate, comparison)
            for key in SAMPLE_KEYS if key in source and not isinstance(source[key], dict | list)]


def _first(keys: tuple[str, ...], *sources: Mapping[str, Any]) -> Any:
    for source in sources:
        for key in keys:
            if source.get(key) is not None:
                return source[key]
    return None


def _number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)
