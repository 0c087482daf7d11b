"""Judge finished subjects under contract versions. Pure: no database, no Kafka."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from contract.evaluate import CompiledContract, Evaluation, evaluate_subject
from contract.inputs import build_input
from contract.judged import evaluate_judged, requests
from contract.judges import JudgeRequest, Verdict
from contract.sections import Harness
from contract.split import subject_split
from contract.subject import Subject
from evaluators.judging import Judging
from evaluators.model import RewardRecord, VersionRef, failed_reward, reward_for, subject_tenant

log = logging.getLogger(__name__)


# Input variables read here and by the reward records (model.reward_for), beside those
# the contract engine reads (CompiledContract.reads).
EVALUATOR_READS = frozenset({"specialist", "adapter_version"})
# What a judge's prompt is rendered from (contract/judges.py), for a contract with judges.
JUDGE_READS = frozenset({"turns", "user_text", "assistant_text", "specialist"})


@dataclass(frozen=True)
class ScoringVersion:
    """A contract version compiled once, ready to judge many subjects."""

    ref: VersionRef
    compiled: CompiledContract
    # The input variables to build for it: the engine's and the reward's (see `evaluate`).
    needed: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        judged = JUDGE_READS if self.judged else frozenset()
        object.__setattr__(self, "needed", self.compiled.reads | EVALUATOR_READS | judged)

    @property
    def subject_kind(self) -> str:
        return self.compiled.document.evaluation.subject

    @property
    def judged(self) -> bool:
        """Whether its subjects need judges' verdicts before the rubric."""
        return bool(self.compiled.document.evaluation.judges)


@dataclass(frozen=True)
class Awaiting:
    """A subject whose reward under ``ref`` waits for a judge's verdict the log lacks."""

    subject: Subject
    ref: VersionRef


def evaluate(subject: Subject, version: ScoringVersion,
             inputs: dict[int, dict[str, Any]] | None = None) -> tuple[Evaluation, dict[str, Any]]:
    """One subject under one version, with the input it was judged on: the variables its
    expressions, the engine and the reward read (the others are not built).

    ``inputs`` caches the input per harness object: versions that share a harness (most
    of a contract's versions do) share the work of digesting the subject. A version that
    reads a variable the cached input lacks rebuilds it with both versions' variables.
    """
    subject_input = input_for(subject, version, inputs)
    return evaluate_subject(version.compiled, subject_input), subject_input


def input_for(subject: Subject, version: ScoringVersion,
              inputs: dict[int, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The subject's input with the variables ``version`` needs (cached as ``evaluate`` says)."""
    harness = version.compiled.document.harness
    cache = inputs if inputs is not None else {}
    needed = version.needed
    subject_input = cache.get(id(harness))
    if subject_input is None or not needed <= subject_input.keys():
        if subject_input is not None:
            needed |= subject_input.keys()
        subject_input = cache[id(harness)] = build_input(subject, harness, needed)
    return subject_input


def evaluate_with_judges(subject: Subject, version: ScoringVersion, judging: Judging,
                         inputs: dict[int, dict[str, Any]] | None = None, ask: bool = False
                         ) -> tuple[Evaluation | None, dict[str, Any]]:
    """Like ``evaluate``, with the judges' verdicts the log holds (``ask``: the models are
    asked for the others, which may raise ``JudgeUnavailable``); None while one is missing."""
    subject_input = input_for(subject, version, inputs)
    asked = requests(version.compiled, subject_input)
    if not asked:
        return evaluate_subject(version.compiled, subject_input), subject_input
    tenant = subject_tenant(subject)
    verdicts = judging.obtain(asked, tenant) if ask else judging.recorded(asked, tenant)
    if len(verdicts) < len(asked):
        return None, subject_input
    return evaluate_judged(version.compiled, subject_input, verdicts), subject_input


def score_subject(subject: Subject, versions: Iterable[ScoringVersion], judging: Judging | None = None,
                  awaiting: list[Awaiting] | None = None) -> list[RewardRecord]:
    """A reward for every version that applies to ``subject``.

    Rubric failures (a missing field, a type error) come back from the contract engine as
    evaluation errors and are recorded as such. Anything else that goes wrong is a bug in
    the scoring code; it is recorded too (kind ``internal``) instead of stopping the
    worker, because one poison subject must not block every later one in its partition.

    A version with judges is scored with the verdicts the log holds; a subject missing
    one goes to ``awaiting`` (no reward yet: evaluators/judge_backlog.py asks the judge).
    """
    inputs: dict[int, dict[str, Any]] = {}
    records: list[RewardRecord] = []
    for version in versions:
        if version.subject_kind != subject.kind:
            continue
        # The verdicts are read from the log outside the guard below: a database that does
        # not answer is the step's failure (retried), not the subject's.
        verdicts = _recorded(subject, version, judging, inputs) if version.judged else None
        try:
            if version.judged:
                if judging is None or awaiting is None:
                    raise RuntimeError("this scorer has no judge backlog for a contract with judges")
                subject_input = input_for(subject, version, inputs)
                asked = requests(version.compiled, subject_input)  # (raises what _recorded met)
                found = verdicts[1] if verdicts is not None else {}
                if len(found) < len(asked):
                    awaiting.append(Awaiting(subject, version.ref))
                    continue
                evaluation = evaluate_judged(version.compiled, subject_input, found)
            else:
                evaluation, subject_input = evaluate(subject, version, inputs)
        except Exception as exc:
            log.exception("scoring %s under %s failed", subject.id, version.ref.ref)
            records.append(failed_reward(subject, version.ref, f"{type(exc).__name__}: {exc}",
                                         split_of(subject, version.compiled.document.harness)))
            continue
        if evaluation.applicable:
            records.append(reward_for(subject, version.ref, evaluation, subject_input))
    return records


def _recorded(subject: Subject, version: ScoringVersion, judging: Judging | None,
              inputs: dict[int, dict[str, Any]]) -> tuple[list[JudgeRequest], dict[str, Verdict]] | None:
    """The subject's requests under ``version`` and the verdicts the log holds for them;
    None without judging, or where the requests cannot even be made (the guard in
    ``score_subject`` records why when it makes them again)."""
    if judging is None:
        return None
    try:
        asked = requests(version.compiled, input_for(subject, version, inputs))
    except Exception:
        return None
    return asked, (judging.recorded(asked, subject_tenant(subject)) if asked else {})


def split_of(subject: Subject, harness: Harness) -> str:
    """The subject's side (``contract.split``) where judging it failed: from its user text
    as the engine would have read it, or its id if even that cannot be built."""
    try:
        user_text = str(build_input(subject, harness, {"user_text"}).get("user_text") or "")
    except Exception:  # the subject's events defeat input building: its id decides
        user_text = ""
    return subject_split(subject.id, user_text)


def score_subjects(subjects: Iterable[Subject], versions: Sequence[ScoringVersion],
                   judging: Judging | None = None,
                   awaiting: list[Awaiting] | None = None) -> list[RewardRecord]:
    return [record for subject in subjects
            for record in score_subject(subject, versions, judging, awaiting)]


def subject_kinds(versions: Iterable[ScoringVersion]) -> set[str]:
    return {version.subject_kind for version in versions}
