"""Dry runs: score a draft over recent history, compare with a published version, write nothing.

The subjects are the last N finished subjects of the draft's kind, or those closed by
events in a position range. Both the draft and the baseline are evaluated afresh on the
same subject inputs (not read from stored rewards), so the comparison holds even for
subjects the baseline never scored. The summary itself is contract/dryrun.py's.

Bounds: a tenant's dry run sees only subjects whose every event is that tenant's; each
subject under each version has ``subject_budget_s`` of wall time (split across its
expressions); the whole run stops after ``budget_s`` and reports the subjects it scored
(``stopped``). Large runs go through ``evaluators.dryrun_jobs`` with progress.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from contract.dryrun import DryRunReport, dry_run_report
from contract.evaluate import Evaluation
from contract.rubric import EvaluationError
from contract.subject import Subject
from contract.versions import PUBLISHED, ContractVersion, ContractVersions, VersionNotFound
from contract.vocabulary import EPISODE_ENDS, TURN_USER
from evaluators.active import compile_version
from evaluators.dryrun_judges import JudgeTally, waiting_evaluation
from evaluators.judging import JudgeUnavailable, Judging
from evaluators.model import subject_tenant
from evaluators.scoring import ScoringVersion, evaluate, evaluate_with_judges, split_of
from evaluators.subjects import SubjectReader
from events.store import Closer, EventStore

MAX_SUBJECTS = 10_000
DEFAULT_BUDGET_S = 120.0
CLOSERS_OF = {"turn": (TURN_USER, *sorted(EPISODE_ENDS)), "episode": tuple(sorted(EPISODE_ENDS))}


@dataclass(frozen=True)
class Selection:
    """Which subjects to score: the ``last`` N, or those closed in [from_position, to_position]."""

    last: int | None = None
    from_position: int | None = None
    to_position: int | None = None

    def __post_init__(self) -> None:
        ranged = self.from_position is not None or self.to_position is not None
        if (self.last is None) == (not ranged):
            raise ValueError("choose either the last N subjects or a position range")
        if self.last is not None and not 1 <= self.last <= MAX_SUBJECTS:
            raise ValueError(f"last must be between 1 and {MAX_SUBJECTS}")
        if ranged and (self.from_position or 1) > (self.to_position or 1 << 62):
            raise ValueError("from_position is after to_position")

    def to_json(self) -> dict[str, Any]:
        return {"last": self.last, "from_position": self.from_position, "to_position": self.to_position}


@dataclass(frozen=True)
class DryRun:
    draft: ContractVersion
    baseline: ContractVersion | None
    selection: Selection
    subjects: int
    truncated: bool  # the range held more than MAX_SUBJECTS subjects; the first ones were used
    report: DryRunReport
    max_error_rate: float = 1.0  # above it the draft fails the check
    stopped: str | None = None  # why scoring stopped before every selected subject, if it did
    tenant: str | None = None  # whose subjects were scored (None: every tenant's)
    judges: JudgeTally | None = None  # the draft's judges' verdicts, when it has judges

    @property
    def passed(self) -> bool:
        """Whether the draft's error rate over the applicable subjects is within the limit."""
        return self.report.error_rate <= self.max_error_rate

    def to_json(self) -> dict[str, Any]:
        def ref(v: ContractVersion | None) -> dict[str, Any] | None:
            return None if v is None else {"name": v.name, "version": v.version, "status": v.status,
                                           "content_hash": v.content_hash}

        return {"draft": ref(self.draft), "baseline": ref(self.baseline),
                "selection": self.selection.to_json(), "subjects": self.subjects,
                "truncated": self.truncated, "stopped": self.stopped, "tenant": self.tenant,
                "report": self.report.to_json(),
                "check": {"max_error_rate": self.max_error_rate,
                          "error_rate": round(self.report.error_rate, 6), "passed": self.passed},
                **({"judges": self.judges.to_json()} if self.judges is not None else {})}


# Called with (subjects scored, subjects selected) after each subject.
OnProgress = Callable[[int, int], None]


class DryRuns:
    def __init__(self, store: EventStore, contracts: ContractVersions,
                 max_error_rate: float = 0.05, subject_budget_s: float | None = None,
                 budget_s: float = DEFAULT_BUDGET_S,
                 monotonic: Callable[[], float] = time.monotonic,
                 judging: Judging | None = None) -> None:
        self.store, self.contracts = store, contracts
        self.judging = judging if judging is not None else Judging(store)
        self.subject_budget_s, self.budget_s, self._monotonic = subject_budget_s, budget_s, monotonic
        self.subjects = SubjectReader(store)
        self.max_error_rate = max_error_rate

    def versions(self, name: str, version: int,
                 baseline: int | None = None) -> tuple[ContractVersion, ContractVersion | None]:
        """The draft and the baseline a dry run would compare (raises VersionNotFound)."""
        draft = self.contracts.get(name, version)
        return draft, self._baseline(draft, baseline)

    def run(self, name: str, version: int, selection: Selection, baseline: int | None = None,
            top: int = 10, max_error_rate: float | None = None, compare: bool = True,
            tenant: str | None = None, on_progress: OnProgress | None = None,
            ask_judges: bool = True) -> DryRun:
        """Score version ``version`` (typically a draft) and ``baseline`` over ``selection``,
        only ``tenant``'s subjects if given, for at most ``budget_s`` seconds;
        ``compare=False`` skips the baseline (the publish check needs only the errors).

        A version with judges is scored with their verdicts: those the log holds, and
        (``ask_judges``) the judge models are asked for the rest and each answer recorded
        (``judge.verdict``), so what the dry run shows is what publishing will score
        with. A subject whose verdict cannot be had is left out of the report and counted
        in ``judges.waiting``, with the reason."""
        started = self._monotonic()
        draft = self.contracts.get(name, version)
        base = self._baseline(draft, baseline) if compare else None
        scoring = compile_version(draft, self.subject_budget_s)
        base_scoring = compile_version(base, self.subject_budget_s) if base is not None else None
        subjects, truncated = self._select(scoring.subject_kind, selection, tenant)
        draft_evals: list[Evaluation] = []
        base_evals: list[Evaluation] = []
        served_by: dict[str, str | None] = {}
        stopped = None
        judged = JudgeTally() if scoring.judged else None
        for done, subject in enumerate(subjects):
            if self._monotonic() - started > self.budget_s:
                stopped = (f"time budget of {self.budget_s:g}s spent after {done} of "
                           f"{len(subjects)} subjects")
                break
            inputs: dict[int, dict[str, Any]] = {}
            found, served_by[subject.id] = self._judged(subject, scoring, inputs, judged, ask_judges)
            if found is None:
                continue
            draft_evals.append(found)
            if base_scoring is not None:
                base_evals.append(self._judged(subject, base_scoring, inputs, None, False)[0]
                                  or _waiting(subject, base_scoring))
            if on_progress is not None:
                on_progress(done + 1, len(subjects))
        report = dry_run_report(draft_evals, base_evals, top=top, specialists=served_by)
        limit = self.max_error_rate if max_error_rate is None else max_error_rate
        return DryRun(draft, base, selection, len(draft_evals), truncated, report, limit,
                      stopped, tenant, judged)

    def _judged(self, subject: Subject, version: ScoringVersion, inputs: dict[int, dict[str, Any]],
                tally: JudgeTally | None, ask: bool) -> tuple[Evaluation | None, str | None]:
        """``_safe``, with the judges' verdicts for a version that has judges (None: one is
        missing; ``tally`` counts it and keeps the reason)."""
        if not version.judged:
            return _safe(subject, version, inputs)
        try:
            found, subject_input = evaluate_with_judges(subject, version, self.judging, inputs,
                                                        ask=ask and (tally is None or tally.asking))
        except JudgeUnavailable as exc:  # no more asking in this run: the rest is counted
            if tally is not None:
                tally.unavailable(str(exc))
            return None, None
        except Exception:  # reported as _safe reports it
            return _safe(subject, version, inputs)
        if tally is not None:
            tally.add(found)
        served = subject_input.get("specialist")
        return found, served if isinstance(served, str) else None

    def _baseline(self, draft: ContractVersion, chosen: int | None) -> ContractVersion | None:
        if chosen is not None:
            return self.contracts.get(draft.name, chosen)
        # Default: the version the draft was edited from, if published; else the latest
        # published one; with none, the report has no comparison.
        if draft.parent_version is not None:
            parent = self.contracts.get(draft.name, draft.parent_version)
            if parent.status == PUBLISHED:
                return parent
        try:
            latest = self.contracts.latest_published(draft.name)
        except VersionNotFound:
            return None
        return latest if latest.version != draft.version else None

    def _select(self, kind: str, selection: Selection,
                tenant: str | None) -> tuple[list[Subject], bool]:
        if selection.last is not None:
            return self._last(kind, selection.last, tenant), False
        lo, hi = selection.from_position or 1, selection.to_position or self.store.head()
        subjects: list[Subject] = []
        after = lo - 1
        while after < hi and len(subjects) <= MAX_SUBJECTS:
            page = self.store.closers(CLOSERS_OF[kind], after, hi, limit=2000, tenant=tenant)
            if not page:
                break
            subjects += _of_tenant(self.subjects.closed_at(_by_stream(page), {kind}), tenant)
            after = page[-1].position
        subjects.sort(key=lambda s: s.events[-1].position)
        return subjects[:MAX_SUBJECTS], len(subjects) > MAX_SUBJECTS

    def _last(self, kind: str, n: int, tenant: str | None) -> list[Subject]:
        subjects: list[Subject] = []
        before = self.store.head()
        while len(subjects) < n and before > 0:
            page = self.store.closers(CLOSERS_OF[kind], 0, before, tenant=tenant,
                                      limit=max(2 * (n - len(subjects)), 200), newest_first=True)
            if not page:
                break
            subjects += _of_tenant(self.subjects.closed_at(_by_stream(page), {kind}), tenant)
            before = page[-1].position - 1
        subjects.sort(key=lambda s: s.events[-1].position, reverse=True)
        return sorted(subjects[:n], key=lambda s: s.events[-1].position)


def _waiting(subject: Subject, version: ScoringVersion) -> Evaluation:
    return waiting_evaluation(subject.id, version.ref.content_hash,
                              split_of(subject, version.compiled.document.harness))


def _of_tenant(subjects: list[Subject], tenant: str | None) -> list[Subject]:
    """A tenant sees a subject only if every event of it is the tenant's (a stream
    written before keys had tenants may mix them)."""
    return subjects if tenant is None else [s for s in subjects if subject_tenant(s) == tenant]


def _by_stream(closers: Sequence[Closer]) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for closer in closers:
        found.setdefault(closer.stream_id, []).append(closer.stream_seq)
    return found


def _safe(subject: Subject, version: ScoringVersion,
          inputs: dict[int, dict[str, Any]]) -> tuple[Evaluation, str | None]:
    """The evaluation, and the specialist that served the subject."""
    try:
        evaluation, subject_input = evaluate(subject, version, inputs)
        served = subject_input.get("specialist")
        return evaluation, served if isinstance(served, str) else None
    except Exception as exc:  # report it like a rubric error; a dry run must not die on one subject
        return Evaluation(subject.id, version.ref.content_hash, True, None, {}, {}, False,
                          split_of(subject, version.compiled.document.harness), False,
                          (EvaluationError("evaluator", f"{type(exc).__name__}: {exc}", "internal"),)), None
