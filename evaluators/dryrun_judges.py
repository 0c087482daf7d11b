"""What a dry run shows of a draft's judges: their verdicts on history, read as the draft
reads them, and the subjects it could not judge (the judge unavailable) with the reason."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from contract.evaluate import Evaluation
from contract.rubric import EvaluationError

SAMPLES = 5  # verdicts shown per judge


@dataclass
class JudgeTally:
    judged: int = 0  # subjects with every verdict
    waiting: int = 0  # subjects left out: a verdict could not be had
    reason: str | None = None  # why (the first JudgeUnavailable)
    asking: bool = True  # whether the models are still asked (not after one was unavailable)
    per_judge: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, evaluation: Evaluation | None) -> None:
        if evaluation is None:
            self.waiting += 1
            self.reason = self.reason or "the log holds no verdict and the judges were not asked"
            return
        self.judged += 1
        for j in evaluation.judgements:
            entry = self.per_judge.setdefault(str(j["judge"]), {
                "model": j["model"], "verdicts": 0, "unreadable": 0, "scores": [], "samples": []})
            entry["verdicts"] += 1
            if j.get("error"):
                entry["unreadable"] += 1
            elif j.get("score") is not None:
                entry["scores"].append(float(j["score"]))
            if len(entry["samples"]) < SAMPLES:
                entry["samples"].append({"subject_id": evaluation.subject_id, "verdict": j["verdict"],
                                         "score": j.get("score"), "error": j.get("error"),
                                         "prompt_hash": j["prompt_hash"]})

    def unavailable(self, reason: str) -> None:
        self.waiting += 1
        self.reason = self.reason or reason
        self.asking = False

    def to_json(self) -> dict[str, Any]:
        judges = {}
        for judge_id, entry in sorted(self.per_judge.items()):
            scores = entry["scores"]
            judges[judge_id] = {"model": entry["model"], "verdicts": entry["verdicts"],
                                "unreadable": entry["unreadable"],
                                "mean_score": round(sum(scores) / len(scores), 6) if scores else None,
                                "samples": entry["samples"]}
        return {"judged": self.judged, "waiting": self.waiting, "reason": self.reason,
                "judges": judges}


def waiting_evaluation(subject_id: str, contract_hash: str, split: str) -> Evaluation:
    """A baseline's evaluation where its judge's verdict is not in the log: an error that
    says so (the dry run does not ask the baseline's judges)."""
    error = EvaluationError("judge", "no verdict in the log for the baseline's judge", "judge")
    return Evaluation(subject_id, contract_hash, True, None, {}, {}, False, split, False, (error,))
