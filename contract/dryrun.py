"""The pure half of a dry run: compare a draft's evaluations of history with a baseline's.

The caller evaluates the same subjects under the draft and under the baseline version
(usually the draft's parent) and hands both lists here. Subjects are matched by id;
only subjects scored under both count towards the deltas and the movers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

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


class ErrorSample(TypedDict):
    """A subject's rubric error (``EvaluationError.to_json``, with the subject)."""

    subject_id: str
    item: str
    message: str
    kind: str


class CriterionShift(TypedDict):
    """One criterion under the draft against the baseline."""

    mean: float | None
    baseline_mean: float | None
    mean_delta: float | None
    compared: int
    errors: int
    baseline_errors: int


class SpecialistShift(TypedDict):
    """The subjects one specialist served ("-": none), under the draft against the baseline."""

    count: int
    applicable: int
    scored: int
    errors: int
    error_rate: float
    mean: float | None
    baseline_mean: float | None
    mean_delta: float | None
    compared: int


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
    error_samples: tuple[ErrorSample, ...]  # a few errors, to show the author why
    criteria: dict[str, CriterionShift] = field(default_factory=dict)  # by criterion id
    specialists: dict[str, SpecialistShift] = field(default_factory=dict)

    @property
    def error_rate(self) -> float:
        """Share of the applicable subjects the draft could not score (0 with none)."""
        return self.errors / self.applicable if self.applicable else 0.0

    def to_json(self) -> dict[str, Any]:
        body = {key: getattr(self, key) for key in self.__dataclass_fields__}
        body["error_rate"] = round(self.error_rate, 6)
        body["histogram"] = list(self.histogram)
        body["baseline_histogram"] = list(self.baseline_histogram)
        body["largest_movers"] = [
            {"subject_id": m.subject_id, "baseline": m.baseline, "draft": m.draft, "delta": m.delta}
            for m in self.largest_movers
        ]
        body["error_samples"] = list(self.error_samples)
        return body


def dry_run_report(
    draft: Sequence[Evaluation], baseline: Sequence[Evaluation], top: int = 10, samples: int = 5,
    specialists: Mapping[str, str | None] | None = None,
) -> DryRunReport:
    """Summarise how the draft would re-score the subjects the baseline scored, overall,
    per criterion and per specialist (``specialists``: subject id -> who served it)."""
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
        criteria=_criteria(draft, before),
        specialists=_by_specialist(draft, before, specialists or {}),
    )


def _criteria(draft: Sequence[Evaluation], before: Mapping[str, Evaluation]) -> dict[str, CriterionShift]:
    ids = sorted({c for e in [*draft, *before.values()] for c in e.components}
                 | {i.removeprefix("criterion:") for e in [*draft, *before.values()]
                    for i in (err.item for err in e.errors) if i.startswith("criterion:")})
    found: dict[str, CriterionShift] = {}
    for cid in ids:
        ours = [e.components[cid] for e in draft if cid in e.components]
        theirs = [e.components[cid] for e in before.values() if cid in e.components]
        deltas = [e.components[cid] - before[e.subject_id].components[cid] for e in draft
                  if cid in e.components and cid in before.get(e.subject_id, _NONE).components]
        found[cid] = {"mean": _mean(ours), "baseline_mean": _mean(theirs),
                      "mean_delta": _mean(deltas), "compared": len(deltas),
                      "errors": _erred(draft, f"criterion:{cid}"),
                      "baseline_errors": _erred(list(before.values()), f"criterion:{cid}")}
    return found


def _by_specialist(draft: Sequence[Evaluation], before: Mapping[str, Evaluation],
                   specialists: Mapping[str, str | None]) -> dict[str, SpecialistShift]:
    groups: dict[str, list[Evaluation]] = {}
    for evaluation in draft:
        groups.setdefault(specialists.get(evaluation.subject_id) or "-", []).append(evaluation)
    found: dict[str, SpecialistShift] = {}
    for name in sorted(groups):
        ours = groups[name]
        theirs = [before[e.subject_id] for e in ours if e.subject_id in before]
        applicable = sum(1 for e in ours if e.applicable)
        errors = sum(1 for e in ours if e.errors)
        scored = [e.score for e in ours if e.score is not None]
        deltas = [e.score - (before[e.subject_id].score or 0.0) for e in ours
                  if e.score is not None and e.subject_id in before
                  and before[e.subject_id].score is not None]
        found[name] = {"count": len(ours), "applicable": applicable, "scored": len(scored),
                       "errors": errors, "error_rate": errors / applicable if applicable else 0.0,
                       "mean": _mean(scored),
                       "baseline_mean": _mean([e.score for e in theirs if e.score is not None]),
                       "mean_delta": _mean(deltas), "compared": len(deltas)}
    return found


def _erred(evaluations: Sequence[Evaluation], item: str) -> int:
    return sum(1 for e in evaluations if any(err.item == item for err in e.errors))


_NONE = Evaluation("", "", False, None, {}, {}, False, "train", False)


def histogram(scores: Sequence[float], bins: int = BINS) -> tuple[int, ...]:
    """Counts per equal-width bin over [0, 1]; 1.0 falls in the last bin, not a new one."""
    counts = [0] * bins
    for score in scores:
        counts[min(bins - 1, max(0, int(score * bins)))] += 1
    return tuple(counts)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _samples(draft: Sequence[Evaluation], limit: int) -> list[ErrorSample]:
    found: list[ErrorSample] = []
    for evaluation in draft:
        for error in evaluation.errors:
            if len(found) >= limit:
                return found
            found.append({"subject_id": evaluation.subject_id, "item": error.item,
                          "message": error.message, "kind": error.kind})
    return found
