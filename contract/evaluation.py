"""The evaluation of one subject under one contract version (contract/evaluate.py makes it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contract.rubric import EvaluationError


@dataclass(frozen=True)
class Evaluation:
    subject_id: str
    contract_hash: str
    applicable: bool
    score: float | None  # None: not applicable, or an error prevented a score
    components: dict[str, float]  # criterion id -> value, for those that evaluated
    gates: dict[str, bool]
    gated: bool  # a gate was false and forced the score to 0
    split: str  # "train" | "held_out"
    eligible: bool
    errors: tuple[EvaluationError, ...] = ()
    # What each judge said and how it was read (contract/judges.py ``judgement``); empty
    # for a contract without judges.
    judgements: tuple[dict[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        body = {
            "subject_id": self.subject_id,
            "contract_hash": self.contract_hash,
            "applicable": self.applicable,
            "score": self.score,
            "components": dict(sorted(self.components.items())),
            "gates": dict(sorted(self.gates.items())),
            "gated": self.gated,
            "split": self.split,
            "eligible": self.eligible,
            "errors": [error.to_json() for error in self.errors],
        }
        if self.judgements:
            body["judgements"] = [dict(j) for j in self.judgements]
        return body


def made_evaluation(subject_id: str, contract_hash: str, applicable: bool, score: float | None,
                    components: dict[str, float], gates: dict[str, bool], gated: bool, split: str,
                    eligible: bool, errors: tuple[EvaluationError, ...]) -> Evaluation:
    """``Evaluation(...)`` with its fields set at once: the frozen dataclass's ``__init__``
    sets them one ``object.__setattr__`` at a time (one evaluation per subject and version;
    it checks nothing)."""
    made = _new(Evaluation)
    made.__dict__.update(subject_id=subject_id, contract_hash=contract_hash, applicable=applicable,
                         score=score, components=components, gates=gates, gated=gated, split=split,
                         eligible=eligible, errors=errors, judgements=())
    return made


_new = object.__new__
