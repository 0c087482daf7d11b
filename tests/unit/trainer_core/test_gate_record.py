"""The gate record's summary keeps every figure and drops what names a held-out case; its
cases come page by page."""

from __future__ import annotations

from typing import Any

from trainer.gate.decision import judge_rollouts
from trainer.gate.policy import GatePolicy
from trainer.gate.record import gate_cases, gate_summary
from trainer.gate.rollout import RolloutMetrics

CASES = tuple(f"turn:s{i}:1" for i in range(5))


def side(rewards: tuple[float, ...], said: str) -> RolloutMetrics:
    return RolloutMetrics(sum(rewards) / len(rewards), len(rewards), 1, {"polite": 0.5},
                          (f"criterion:polite: no such key: '{said} secret'",), "f" * 64,
                          rewards, CASES, tuple(f"{said} {i}" for i in range(5)))


def record() -> dict[str, Any]:
    ours, theirs = side((1.0, 1.0, 1.0, 0.0, 1.0), "new"), side((0.0, 1.0, 0.0, 0.0, 1.0), "old")
    policy = GatePolicy(metric="rollout", test="sign", seed=3, resamples=100)
    return {**judge_rollouts(ours, theirs, policy), "metric": "rollout",
            "rollouts": {"successor": ours.to_dict(), "parent": theirs.to_dict(), "harness": "text"}}


def test_the_summary_keeps_the_figures_and_names_no_case() -> None:
    full = record()
    summary = gate_summary(full)
    text = repr(summary)
    assert not any(case in text for case in CASES) and "secret" not in text and "new 0" not in text
    assert summary["seed"] == 3 and summary["interval"] == full["interval"]
    assert summary["sign_test"] == full["sign_test"] and summary["promote"] == full["promote"]
    assert summary["rollouts"]["cases"] == {"count": 5}
    assert summary["rollouts"]["successor"]["mean_reward"] == 0.8
    assert summary["rollouts"]["successor"]["per_criterion"] == {"polite": 0.5}
    assert summary["comparison"]["criteria"]["polite"]["delta"] == 0.0
    assert full["rollouts"]["successor"]["answers"]  # the stored record is left whole


def test_cases_come_in_order_page_by_page() -> None:
    full = record()
    first = gate_cases(full, None, 2)
    second = gate_cases(full, first["next_after"], 2)
    last = gate_cases(full, second["next_after"], 2)
    assert [c["index"] for c in first["cases"] + second["cases"] + last["cases"]] == [0, 1, 2, 3, 4]
    assert last["next_after"] is None and first["total"] == 5
    assert first["cases"][0] == {"index": 0, "subject_id": CASES[0],
                                 "successor": {"answer": "new 0", "reward": 1.0},
                                 "parent": {"answer": "old 0", "reward": 0.0}}
    assert first["error_samples"]["parent"] == ["criterion:polite: no such key: 'old secret'"]
    assert gate_cases(full, 10, 2)["cases"] == []


def test_an_offline_record_has_no_cases() -> None:
    offline = {"promote": False, "metric": "offline", "comparison": {"criteria": {"x": {
        "successor": None, "parent": 0.5}}}}
    assert gate_summary(offline)["comparison"]["criteria"]["x"]["delta"] is None
    assert gate_cases(offline, None, 5) == {"total": 0, "cases": [], "next_after": None,
                                            "error_samples": {"successor": [], "parent": []}}
