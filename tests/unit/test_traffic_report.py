"""The figures bench/traffic.py reports: the intervals, the judge's agreement with the
users' checkers, and the tables docs/traffic.md shows (every run's gate record, its probe
sets and the audit, promoted or not)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _report_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("traffic_report", BENCH / "traffic_report.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("traffic_report", module)
    spec.loader.exec_module(module)
    return module


report = _report_module()


def test_the_wilson_interval_matches_its_textbook_values() -> None:
    assert report.wilson(0, 8) == pytest.approx((0.0, 0.3244), abs=1e-4)
    assert report.wilson(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert report.wilson(0, 0) == (0.0, 1.0)


def test_a_paired_change_with_no_user_moving_has_a_zero_interval_and_a_gain_a_positive_one() -> None:
    assert report.paired_interval([True, False] * 5, [True, False] * 5) == (0.0, 0.0, 0.0)
    mean, low, high = report.paired_interval([False] * 20, [True] * 12 + [False] * 8)
    assert mean == pytest.approx(0.6) and 0.35 < low < 0.6 < high < 0.85


def test_generations_compare_the_same_users_against_the_base() -> None:
    talks = [_talk(f"u{i}", g, passed=(g == 1 and i < 3)) for g in (0, 1) for i in range(6)]
    rows = report.generations(talks, 1)
    assert [r["passed"] for r in rows] == [0, 3]
    assert rows[1]["vs_base"]["difference"] == pytest.approx(0.5)
    assert "vs_base" not in rows[0]


def test_the_judge_agreement_leaves_out_unread_verdicts_and_corrects_for_chance() -> None:
    pairs = [(True, 0.9), (True, 0.8), (False, 0.2), (False, 0.7), (True, None)]
    found = report.agreement(pairs)
    assert (found["answers"], found["read"], found["unreadable"]) == (5, 4, 1)
    assert found["agreement"] == pytest.approx(0.75)
    assert found["kappa"] == pytest.approx(0.5)  # chance agreement 0.5 at these margins
    assert report.agreement([(True, None)]) == {"answers": 1, "read": 0}


def test_the_tables_show_a_rejected_run_with_its_margin_a_probe_loss_and_a_failed_audit() -> None:
    rejected = {"generation": 1, "run_status": "succeeded", "adapter": "chat@2", "status": "rejected",
                "objective": "dpo", "examples_used": 16, "pairs_used": 8,
                "comparison": {"heldout_margin": {"successor": -0.391, "parent": -0.349, "delta": -0.042}},
                "probes": {"ok": False, "sets": {"general": {
                    "n": 16, "delta": -0.125, "non_inferiority": {"lower": -0.2, "ok": False}}}}}
    failed = {"generation": 0, "run_status": "failed", "error": "out of memory"}
    text = report.markdown({"generations": report.generations([_talk("u0", 0, True)], 0),
                            "judge": report.agreement([(True, 0.9)]),
                            "runs": [failed, rejected], "audit": {"exit": 1}})
    assert "| 0 | chat@0 | 1 | 1.000 |" in text
    assert "run failed | out of memory" in text
    assert "| chat@2 | rejected | -0.391 vs -0.349 (-0.042) | general n=16: -0.125 (-0.200, loss) |" in text
    assert "agreement 1.000" in text
    assert "`hcp audit all`: FAILED (exit 1)." in text


def _talk(user: str, generation: int, passed: bool) -> dict[str, Any]:
    return {"user_id": user, "side": "held_out", "generation": generation, "passed": passed,
            "adapter_version": f"chat@{generation}", "kind": "brief"}
