"""A subject judged under a contract with judges: requests first, then the rubric. Pure.

The caller (the evaluators) renders the requests a subject needs (``requests``), finds
the verdicts (the log's memo, or the judge model), and hands them back here: each is
read by its judge's rule and given to the expressions as ``judge.<id>``. A verdict that
cannot be read is an evaluation error on ``judge:<id>`` (kind ``judge``), with no score:
a subject the judge could not judge is neither rewarded nor punished; unless the judge
names an ``unreadable`` score, which it then has (the judgement keeps the error). Every evaluation
records its judgements (whose verdict on what, and how it was read).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from contract.evaluate import CompiledContract, applies_to, evaluate_subject
from contract.evaluation import Evaluation
from contract.judges import JudgeRequest, Verdict, judgement, read, render, variable
from contract.rubric import EvaluationError


def judges_of(compiled: CompiledContract) -> bool:
    """Whether the contract has judges (its subjects need verdicts before the rubric)."""
    return bool(compiled.document.evaluation.judges)


def requests(compiled: CompiledContract, subject_input: Mapping[str, Any]) -> list[JudgeRequest]:
    """The requests the subject needs: one per judge, none if the contract does not apply
    (or ``applies_to`` fails: that is the evaluation's error to report)."""
    judges = compiled.document.evaluation.judges
    if not judges or applies_to(compiled, subject_input) is not True:
        return []
    return [render(judge, subject_input) for judge in judges]


def evaluate_judged(compiled: CompiledContract, subject_input: Mapping[str, Any],
                    verdicts: Mapping[str, Verdict]) -> Evaluation:
    """The evaluation with the judges' verdicts (judge id -> verdict; every request of
    ``requests`` must have one)."""
    asked = requests(compiled, subject_input)
    if not asked:
        return evaluate_subject(compiled, subject_input)
    judges = {j.id: j for j in compiled.document.evaluation.judges}
    seen: dict[str, Any] = {}
    records: list[dict[str, Any]] = []
    errors: list[EvaluationError] = []
    for request in asked:
        judge, verdict = judges[request.judge_id], verdicts[request.judge_id]
        reading = read(judge, verdict.text, request.answers)
        seen[judge.id] = variable(judge, verdict, reading)
        records.append(judgement(judge, request, verdict, reading))
        if reading.error is not None and judge.unreadable is None:
            errors.append(EvaluationError(f"judge:{judge.id}", reading.error, "judge"))
    evaluation = evaluate_subject(compiled, {**subject_input, "judge": seen})
    if errors:
        evaluation = replace(evaluation, score=None, eligible=False,
                             errors=(*errors, *evaluation.errors))
    return replace(evaluation, judgements=tuple(records))
