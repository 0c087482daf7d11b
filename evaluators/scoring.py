"""Judge finished subjects under contract versions. Pure: no database, no Kafka."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from contract.evaluate import CompiledContract, Evaluation, evaluate_subject
from contract.inputs import build_input
from contract.sections import Harness
from contract.split import subject_split
from contract.subject import Subject
from evaluators.model import RewardRecord, VersionRef, failed_reward, reward_for

log = logging.getLogger(__name__)


# Input variables read here and by the reward records (model.reward_for), beside those
# the contract engine reads (CompiledContract.reads).
EVALUATOR_READS = frozenset({"specialist", "adapter_version"})


@dataclass(frozen=True)
class ScoringVersion:
    """A contract version compiled once, ready to judge many subjects."""

    ref: VersionRef
    compiled: CompiledContract
    # The input variables to build for it: the engine's and the reward's (see `evaluate`).
    needed: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "needed", self.compiled.reads | EVALUATOR_READS)

    @property
    def subject_kind(self) -> str:
        return self.compiled.document.evaluation.subject


def evaluate(subject: Subject, version: ScoringVersion,
             inputs: dict[int, dict[str, Any]] | None = None) -> tuple[Evaluation, dict[str, Any]]:
    """One subject under one version, with the input it was judged on: the variables its
    expressions, the engine and the reward read (the others are not built).

    ``inputs`` caches the input per harness object: versions that share a harness (most
    of a contract's versions do) share the work of digesting the subject. A version that
    reads a variable the cached input lacks rebuilds it with both versions' variables.
    """
    harness = version.compiled.document.harness
    cache = inputs if inputs is not None else {}
    needed = version.needed
    subject_input = cache.get(id(harness))
    if subject_input is None or not needed <= subject_input.keys():
        if subject_input is not None:
            needed |= subject_input.keys()
        subject_input = cache[id(harness)] = build_input(subject, harness, needed)
    return evaluate_subject(version.compiled, subject_input), subject_input


def score_subject(subject: Subject, versions: Iterable[ScoringVersion]) -> list[RewardRecord]:
    """A reward for every version that applies to ``subject``.

    Rubric failures (a missing field, a type error) come back from the contract engine as
    evaluation errors and are recorded as such. Anything else that goes wrong is a bug in
    the scoring code; it is recorded too (kind ``internal``) instead of stopping the
    worker, because one poison subject must not block every later one in its partition.
    """
    inputs: dict[int, dict[str, Any]] = {}
    records: list[RewardRecord] = []
    for version in versions:
        if version.subject_kind != subject.kind:
            continue
        try:
            evaluation, subject_input = evaluate(subject, version, inputs)
        except Exception as exc:
            log.exception("scoring %s under %s failed", subject.id, version.ref.ref)
            records.append(failed_reward(subject, version.ref, f"{type(exc).__name__}: {exc}",
                                         split_of(subject, version.compiled.document.harness)))
            continue
        if evaluation.applicable:
            records.append(reward_for(subject, version.ref, evaluation, subject_input))
    return records


def split_of(subject: Subject, harness: Harness) -> str:
    """The subject's side (``contract.split``) where judging it failed: from its user text
    as the engine would have read it, or its id if even that cannot be built."""
    try:
        user_text = str(build_input(subject, harness, {"user_text"}).get("user_text") or "")
    except Exception:  # the subject's events defeat input building: its id decides
        user_text = ""
    return subject_split(subject.id, user_text)


def score_subjects(subjects: Iterable[Subject],
                   versions: Sequence[ScoringVersion]) -> list[RewardRecord]:
    return [record for subject in subjects for record in score_subject(subject, versions)]


def subject_kinds(versions: Iterable[ScoringVersion]) -> set[str]:
    return {version.subject_kind for version in versions}
