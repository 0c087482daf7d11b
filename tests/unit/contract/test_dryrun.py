"""The dry-run report's numbers."""

from __future__ import annotations

import pytest

from contract.dryrun import dry_run_report, histogram
from contract.evaluate import Evaluation
from contract.rubric import EvaluationError


def ev(subject: str, score: float | None, eligible: bool = False, error: bool = False) -> Evaluation:
    errors = (EvaluationError("criterion:a", "boom"),) if error else ()
    return Evaluation(subject, "h", True, score, {}, {}, False, "train", eligible, errors)


def test_report() -> None:
    baseline = [ev("s1", 0.5, True), ev("s2", 0.5), ev("s3", 0.9, True), ev("s4", None, error=True)]
    draft = [
        ev("s1", 0.7),
        ev("s2", 0.1, True),
        ev("s3", 0.95, True),
        ev("s4", 1.0),
        ev("s5", None, error=True),
    ]
    report = dry_run_report(draft, baseline)
    assert (report.count, report.scored, report.errors, report.baseline_errors) == (5, 4, 1, 1)
    assert report.mean == pytest.approx((0.7 + 0.1 + 0.95 + 1.0) / 4)
    assert report.baseline_mean == pytest.approx((0.5 + 0.5 + 0.9) / 3)
    assert report.compared == 3  # s4 had no baseline score, s5 no draft score
    assert report.mean_delta == pytest.approx((0.2 - 0.4 + 0.05) / 3)
    assert report.histogram == (0, 1, 0, 0, 0, 0, 0, 1, 0, 2)
    assert (report.became_eligible, report.became_ineligible) == (1, 1)
    assert [m.subject_id for m in report.largest_movers] == ["s2", "s1", "s3"]
    assert report.largest_movers[0].delta == pytest.approx(-0.4)
    assert report.error_samples[0]["subject_id"] == "s5"
    assert report.to_json()["largest_movers"][0]["subject_id"] == "s2"


def test_movers_are_capped_and_empty_input_is_fine() -> None:
    many = [ev(f"s{i:02}", i / 100) for i in range(30)]
    shifted = [ev(f"s{i:02}", min(1.0, i / 100 + i / 200)) for i in range(30)]
    assert [m.subject_id for m in dry_run_report(shifted, many).largest_movers][:2] == ["s29", "s28"]
    assert len(dry_run_report(shifted, many).largest_movers) == 10
    empty = dry_run_report([], [])
    assert (empty.count, empty.mean, empty.mean_delta, sum(empty.histogram)) == (0, None, None, 0)


def test_histogram_edges() -> None:
    assert histogram([0.0, 0.1, 0.0999, 0.5, 1.0]) == (2, 1, 0, 0, 0, 1, 0, 0, 0, 1)
