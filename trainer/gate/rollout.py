"""Rollouts for the gate: harnesses that answer held-out prompts, and the contract's verdict
on their answers. Pure: the harness a factory builds does the torch work when called.

A gate is given its harnesses by name (``Gate(..., harnesses)``: the composition root
builds them on the process's engine, ``inference``); a gate policy names the one it uses
(``rollout_harness``, default ``"text"``: greedy generation with base + adapter).

A held-out subject is judged again with a generated answer in place of the logged one:
its events are kept, the text of its LAST ``turn.assistant`` is replaced, and the
contract version that made its reward evaluates it (``build_input`` +
``evaluate_subject``). With the ``"text"`` harness everything else in the subject (tool
calls, check results, feedback, the outcome) is what happened to the logged answer, so a
criterion that reads only those gives every model the same value. A harness that also
``respond``s (``AnsweringHarness``, e.g. the task harness the composition root gives the
gate as ``"tasks"``) returns the events its answer produces (the tool call it made and its
result, the check of what it wrote), and those replace the logged ones of the last turn:
then the contract judges what each model really did. An evaluation without a score (an
expression error, or the contract no longer applies to the changed subject) scores 0 and
is counted in ``errors``.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from contract.evaluate import CompiledContract, Evaluation, evaluate_subject
from contract.inputs import build_input
from contract.judged import evaluate_judged, requests
from contract.subject import Subject
from contract.vocabulary import TURN_ASSISTANT, TURN_USER
from evaluators.judging import Judging
from evaluators.model import subject_tenant
from kernel.errors import Invalid
from trainer.datasets.manifest import ManifestExample
from trainer.gate.shapes import MemoProvenance
from trainer.ml.metrics import RolloutHarness

ERROR_SAMPLES = 5  # distinct error messages kept in the gate record


@dataclass(frozen=True)
class RolloutTarget:
    """The model a harness answers with."""

    base_dir: str | Path
    adapter_dir: Path | None  # None: the bare base model (the parent of a root version)
    max_new_tokens: int
    max_prompt_tokens: int | None = None  # keep the end of longer prompts
    device: str | None = None
    precision: str = "auto"  # of the base's weights (trainer.ml.load.base_dtype)
    base_sha256: str = ""  # the base's weights digest ("": hashed when the engine needs it)
    adapter_sha256: str | None = None  # the adapter's artifact digest (None: hashed likewise)
    base_name: str = ""


@dataclass(frozen=True)
class Answer:
    """A generated answer and the events it produced besides ``turn.assistant``:
    (type, payload) pairs, e.g. the tool call it made and its result, its check."""

    text: str
    events: tuple[tuple[str, dict[str, Any]], ...] = ()
    passed: bool | None = None  # the check's verdict, where the harness checks answers
    group: str | None = None  # the task's template group, where the harness knows it


@runtime_checkable
class AnsweringHarness(Protocol):
    """A rollout harness that also says what an answer did, for every case."""

    replaces: frozenset[str]  # event types of the last turn its answers supersede

    def answer_texts(self, cases: Sequence[RolloutCase]) -> list[str]:
        """Greedy answers, one per case (the model's work)."""

    def respond(self, cases: Sequence[RolloutCase], texts: Sequence[str]) -> list[Answer]:
        """What each answer did (checks, tool calls): cheap, and the same every time."""


HarnessFactory = Callable[[RolloutTarget], RolloutHarness]


def pick_harness(harnesses: Mapping[str, HarnessFactory], name: str) -> HarnessFactory:
    """The factory a gate policy names (``rollout_harness = name``).

    Raises:
        Invalid: ``harnesses`` has none under ``name``.
    """
    factory = harnesses.get(name)
    if factory is None:
        raise Invalid(f"no rollout harness '{name}' (the gate has: {', '.join(sorted(harnesses))})")
    return factory


Evaluate = Callable[[CompiledContract, Subject], Evaluation]


@dataclass(frozen=True)
class RolloutCase:
    """One held-out prompt to answer and how to judge the answer."""

    prompt: str
    subject: Subject
    contract: CompiledContract
    # How the contract judges a subject, where it has judges: their verdicts first
    # (``judged_by``); None: the rubric alone.
    evaluate: Evaluate | None = field(default=None, compare=False, repr=False)


def judged_by(judging: Judging) -> Evaluate:
    """A contract with judges judging a subject: each judge's verdict on the generated
    answer (recorded once, as every verdict: evaluators/judging.py), then the rubric.

    Raises:
        JudgeUnavailable: a judge cannot answer now (the run fails and says so).
    """
    def evaluate(compiled: CompiledContract, subject: Subject) -> Evaluation:
        subject_input = build_input(subject, compiled.document.harness)
        asked = requests(compiled, subject_input)
        verdicts = judging.obtain(asked, subject_tenant(subject)) if asked else {}
        return evaluate_judged(compiled, subject_input, verdicts)
    return evaluate


def latest(held_out: Sequence[ManifestExample], limit: int) -> list[ManifestExample]:
    """The last ``limit`` held-out examples in manifest (reward position) order: the
    most recent traffic, the same every time the manifest is rebuilt."""
    return list(held_out[-limit:]) if limit > 0 else []


def with_response(subject: Subject, response: str | Answer,
                  replaces: frozenset[str] = frozenset()) -> Subject:
    """``subject`` with the text of its last assistant turn replaced by ``response``; an
    ``Answer``'s events take the place of the last turn's events of a ``replaces`` type,
    right after the answer."""
    answer = response if isinstance(response, Answer) else Answer(response)
    events = subject.events
    index = max((i for i, e in enumerate(events) if e.type == TURN_ASSISTANT), default=None)
    if index is None:
        raise ValueError(f"subject {subject.id} has no assistant turn to replace")
    event = events[index]
    changed = replace(event, payload={**event.payload, "text": answer.text})
    turn = max((i for i, e in enumerate(events) if e.type == TURN_USER), default=0)
    keep = [i != index and not (i > turn and e.type in replaces) for i, e in enumerate(events)]
    kept = [e for e, k in zip(events, keep, strict=True) if k]
    at = sum(keep[:index])  # the kept events that came before the answer
    added = [replace(event, event_id=uuid.uuid5(event.event_id, f"{n}:{kind}"), type=kind,
                     payload=payload) for n, (kind, payload) in enumerate(answer.events)]
    ordered = [*kept[:at], changed, *added, *kept[at:]]
    first = events[0].stream_seq
    renumbered = tuple(replace(e, stream_seq=first + n) for n, e in enumerate(ordered))
    return replace(subject, events=renumbered)


def judge_response(case: RolloutCase, response: str | Answer,
                   replaces: frozenset[str] = frozenset()) -> Evaluation:
    subject = with_response(case.subject, response, replaces)
    if case.evaluate is not None:
        return case.evaluate(case.contract, subject)
    return evaluate_subject(case.contract, build_input(subject, case.contract.document.harness))


@dataclass(frozen=True)
class RolloutMetrics:
    mean_reward: float  # an answer without a score counts as 0
    n: int
    errors: int  # answers the contract gave no score
    per_criterion: dict[str, float]  # mean of each criterion every case's contract has
    error_samples: tuple[str, ...]
    responses_sha256: str  # which answers, in case order: equal digests, equal answers
    # Per case, in case order: the reward (the gate's paired statistics need them), the
    # subject judged and the answer text (so a later gate can reuse these answers).
    rewards: tuple[float, ...] = ()
    cases: tuple[str, ...] = ()
    answers: tuple[str, ...] = field(default=(), repr=False)
    reused_from: str | None = None  # the answers were generated for another gate record
    # Where the harness checks answers (``tasks``): each case's verdict and template group.
    passes: tuple[bool, ...] = ()
    groups: tuple[str, ...] = ()
    # Where the engine's answers came from (``inference.memo.provenance``): how many the
    # answer memo gave, how many were generated, and the digest of their keys in case order.
    memo: MemoProvenance | None = None

    @property
    def pass_rate(self) -> float | None:
        return sum(self.passes) / len(self.passes) if self.passes else None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "pass_rate": self.pass_rate}


def generate(harness: RolloutHarness, cases: Sequence[RolloutCase]) -> list[str]:
    """Each case's greedy answer (the expensive part)."""
    if isinstance(harness, AnsweringHarness):
        return harness.answer_texts(cases)
    # Greedy decoding answers a prompt the same way every time: generate once per prompt.
    prompts = list(dict.fromkeys(case.prompt for case in cases))
    answers = dict(zip(prompts, harness.generate(prompts), strict=True))
    return [answers[case.prompt] for case in cases]


def measure(harness: RolloutHarness, cases: Sequence[RolloutCase],
            texts: Sequence[str] | None = None, reused_from: str | None = None) -> RolloutMetrics:
    """Each case's answer from ``harness`` (or ``texts`` given), judged by its contract,
    summarised."""
    if not cases:
        raise ValueError("no rollout cases")
    responses = list(texts) if texts is not None else generate(harness, cases)
    memo = None if texts is not None else _memo_record(harness)
    if isinstance(harness, AnsweringHarness):
        answers: list[str | Answer] = list(harness.respond(cases, responses))
        replaces = harness.replaces
    else:
        answers, replaces = list(responses), frozenset()
    evaluations = [judge_response(c, a, replaces) for c, a in zip(cases, answers, strict=True)]
    names = set.intersection(*(set(case.contract.criteria) for case in cases))
    digest = hashlib.sha256("\x00".join(responses).encode()).hexdigest()
    rewards = tuple(e.score or 0.0 for e in evaluations)
    return RolloutMetrics(
        mean_reward=sum(rewards) / len(rewards),
        n=len(evaluations),
        errors=sum(e.score is None for e in evaluations),
        per_criterion={name: sum(e.components.get(name, 0.0) for e in evaluations) / len(evaluations)
                       for name in sorted(names)},
        error_samples=_error_samples(evaluations),
        responses_sha256=digest,
        rewards=rewards,
        cases=tuple(c.subject.id for c in cases),
        answers=tuple(responses),
        reused_from=reused_from,
        passes=tuple(bool(a.passed) for a in answers if isinstance(a, Answer))
        if all(isinstance(a, Answer) and a.passed is not None for a in answers) else (),
        groups=tuple(str(a.group) for a in answers if isinstance(a, Answer))
        if all(isinstance(a, Answer) and a.group is not None for a in answers) else (),
        memo=memo,
    )


def _memo_record(harness: RolloutHarness) -> MemoProvenance | None:
    """A harness on the engine says where its last answers came from (``memo_record``)."""
    record = getattr(harness, "memo_record", None)
    return record() if callable(record) else None


def _error_samples(evaluations: Sequence[Evaluation]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for evaluation in (e for e in evaluations if e.score is None):
        messages = [f"{err.item}: {err.message}" for err in evaluation.errors]
        for message in messages or ["the contract does not apply to the subject with this answer"]:
            seen.setdefault(message, None)
    return tuple(seen)[:ERROR_SAMPLES]
