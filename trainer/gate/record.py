"""The gate record (``metrics.gate``) in two parts: its summary, and its cases page by page.

The record as stored (in the adapter's row and its ``adapter.registered`` event) keeps,
per rollout side, every case's held-out subject id, reward and generated answer: a later
gate reuses the answers, and the audit compares the record whole. Those name every
tenant's held-out experience and what a model said to it, and run to tens of KB, so a
reader of the registry gets the summary (decision, means, interval, n, seed, per-criterion
deltas, the non-inferiority check's figures per probe set), and the cases come from
their own paged route, for keys that may read every tenant's events. Pure.
"""

from __future__ import annotations

from typing import Any

from trainer.gate import probes

SIDES = ("successor", "parent")
# Per-case fields of a rollout side (``gate.rollout.RolloutMetrics``); error samples too,
# as a rubric's error message can quote the subject's text.
PER_CASE = ("cases", "rewards", "answers", "error_samples", "passes", "groups")


def gate_summary(record: dict[str, Any]) -> dict[str, Any]:
    """The record without its per-case fields; ``rollouts.cases`` says how many there are,
    and each criterion row gains its delta (successor - parent)."""
    summary = dict(record)
    rollouts = record.get("rollouts")
    if isinstance(rollouts, dict):
        sides = {side: _side(rollouts.get(side)) for side in SIDES if side in rollouts}
        summary["rollouts"] = {**rollouts, **sides, "cases": {"count": len(_cases(record))}}
    probe_record = record.get("non_inferiority")
    if isinstance(probe_record, dict):
        summary["non_inferiority"] = probes.summary(probe_record)
    comparison = record.get("comparison")
    if isinstance(comparison, dict) and isinstance(comparison.get("criteria"), dict):
        criteria = {name: _with_delta(row) for name, row in comparison["criteria"].items()}
        summary["comparison"] = {**comparison, "criteria": criteria}
    return summary


def with_gate_summary(adapter: dict[str, Any]) -> dict[str, Any]:
    """An adapter version's JSON (``AdapterVersion.to_json()``) with its gate record
    summarised, as the registry's readers see it."""
    metrics = adapter.get("metrics") or {}
    gate = metrics.get("gate")
    if not isinstance(gate, dict):
        return adapter
    return {**adapter, "metrics": {**metrics, "gate": gate_summary(gate)}}


def gate_cases(record: dict[str, Any], after: int | None, limit: int) -> dict[str, Any]:
    """Cases ``after+1 ..`` (at most ``limit``), in the order the gate judged them: the
    held-out subject, and each side's answer and reward; ``next_after`` is None at the end."""
    cases = _cases(record)
    start = 0 if after is None else after + 1
    rollouts = record.get("rollouts") or {}
    indexes = range(start, min(len(cases), start + limit))
    page = [{"index": i, "subject_id": cases[i],
             **{side: _answer(rollouts.get(side) or {}, i) for side in SIDES}} for i in indexes]
    more = bool(indexes) and indexes[-1] + 1 < len(cases)
    return {"total": len(cases), "cases": page, "next_after": indexes[-1] if more else None,
            "error_samples": {side: list((rollouts.get(side) or {}).get("error_samples") or [])
                              for side in SIDES}}


def _cases(record: dict[str, Any]) -> list[str]:
    successor = (record.get("rollouts") or {}).get("successor") or {}
    return [str(case) for case in successor.get("cases") or []]


def _side(measured: Any) -> Any:
    if not isinstance(measured, dict):
        return measured
    return {key: value for key, value in measured.items() if key not in PER_CASE}


def _answer(measured: dict[str, Any], index: int) -> dict[str, Any]:
    answers, rewards = measured.get("answers") or [], measured.get("rewards") or []
    return {"answer": answers[index] if index < len(answers) else None,
            "reward": rewards[index] if index < len(rewards) else None}


def _with_delta(row: Any) -> Any:
    if not isinstance(row, dict):
        return row
    successor, parent = row.get("successor"), row.get("parent")
    numbers = all(isinstance(x, int | float) and not isinstance(x, bool) for x in (successor, parent))
    return {**row, "delta": successor - parent if numbers else None}  # type: ignore[operator]
