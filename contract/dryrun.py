"""The pure half of a dry run: compare a draft's evaluations of history with a baseline's.

The caller evaluates the same subjects under the draft and under the baseline version
(usually the draft's parent) and hands both lists here. Subjects are matched by id;
only subjects scored under both count towards the deltas and the movers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from contract.evaluate import Evaluation

BINS = 10


@dataclass(frozen=True)
class Mover:
    subject_id: str
    baseline: float
    draft: float

    @property
    def delta(self) -> float:
        return self.draft - self.baseline


@dataclass(frozen=True)
class DryRunReport:
    count: int  # subjects evaluated under the draft
    applicable: int  # of those, how many the draft applies to
    scored: int  # of those, how many got a score (no errors)
    errors: int  # draft evaluations with at least one error
    baseline_errors: int
    mean: float | None  # mean draft score over scored subjects
    baseline_mean: float | None  # mean baseline score over its scored subjects
    compared: int  # subjects scored under both
    mean_delta: float | None  # mean (draft - baseline) over the compared subjects
    histogram: tuple[int, ...]  # draft scores in BINS equal bins over [0, 1]
    baseline_histogram: tuple[int, ...]
    became_eligible: int  # not eligible under the baseline, eligible under the draft
    became_ineligible: int
    largest_movers: tuple[Mover, ...]
    error_samples: tuple[dict[str, Any], ...]  # a few errors, to show the author why

    def to_json(self) -> dict[str, Any]:
        body = {key: getattr(self, key) for key in self.__dataclass_fields__}
        body["histogram"] = list(self.histogram)
        body["baseline_histogram"] = list(self.baseline_histogram)
        body["largest_movers"] = [
            {"subject_id": m.subject_id, "baseline": m.baseline, "draft": m.draft, "delta": m.delta}
            for m in self.largest_movers
        ]
        body["error_samples"] = list(self.error_samples)
        return body


def dry_run_report(
    draft: Sequence[Evaluation], baseline: Sequence[Evaluation], top: int = 10, samples: int = 5
) -> DryRunReport:
    """Summarise how the draft would re-score the subjects the baseline scored."""
    before = {e.subject_id: e for e in baseline}
    scores = [e.score for e in draft if e.score is not None]
    baseline_scores = [e.score for e in baseline if e.score is not None]
    pairs = [
        Mover(e.subject_id, before[e.subject_id].score or 0.0, e.score)
        for e in draft
        if e.score is not None and e.subject_id in before and before[e.subject_id].score is not None
    ]
    flips = [(before[e.subject_id].eligible, e.eligible) for e in draft if e.subject_id in before]
    movers = sorted(pairs, key=lambda m: (-abs(m.delta), m.subject_id))[:top]
    return DryRunReport(
        count=len(draft),
        applicable=sum(1 for e in draft if e.applicable),
        scored=len(scores),
        errors=sum(1 for e in draft if e.errors),
        baseline_errors=sum(1 for e in baseline if e.errors),
        mean=_mean(scores),
        baseline_mean=_mean(baseline_scores),
        compared=len(pairs),
        mean_delta=_mean([m.delta for m in pairs]),
        histogram=histogram(scores),
        baseline_histogram=histogram(baseline_scores),
        became_eligible=sum(1 for was, now in flips if now and not was),
        became_ineligible=sum(1 for was, now in flips if was and not now),
        largest_movers=tuple(movers),
        error_samples=tuple(_samples(draft, samples)),
    )


def histogram(scores: Sequence[float], bins: int = BINS) -> tuple[int, ...]:
    """Counts per equal-width bin over [0, 1]; 1.0 falls in the last bin, not a new one."""
    counts = [0] * bins
    for score in scores:
        counts[min(bins - 1, max(0, int(score * bins)))] += 1
    return tuple(counts)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _samples(draft: Sequence[Evaluation], limit: int) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for evaluation in draft:
        for error in evaluation.errors:
            if len(found) >= limit:
                return found
            found.append({"subject_id": evaluation.subject_id, **error.to_json()})
    return found
