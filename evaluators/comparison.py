"""Compare the rewards two versions already stored for the same subjects (no re-scoring).

A dry run scores a draft afresh; once both versions are published and have scored the
same traffic, what they stored is the record to compare. The subjects are the latest N
that version ``b`` rewarded, matched by id with ``a``'s rewards; the summary (overall,
per criterion, per specialist) is the dry run's, from ``contract/dryrun.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contract.dryrun import DryRunReport, dry_run_report
from contract.evaluate import Evaluation
from contract.rubric import EvaluationError
from contract.versions import ContractVersion, ContractVersions
from evaluators.dryrun import MAX_SUBJECTS
from evaluators.model import RewardRecord
from evaluators.rewards import RewardStore
from kernel.errors import Invalid


@dataclass(frozen=True)
class StoredComparison:
    a: ContractVersion
    b: ContractVersion
    subjects: int  # rewards of ``b`` compared
    report: DryRunReport  # ``b`` in the draft's place, ``a`` as the baseline

    def to_json(self) -> dict[str, Any]:
        def ref(v: ContractVersion) -> dict[str, Any]:
            return {"name": v.name, "version": v.version, "status": v.status,
                    "content_hash": v.content_hash}

        return {"source": "stored rewards", "a": ref(self.a), "b": ref(self.b),
                "subjects": self.subjects, "report": self.report.to_json()}


class Comparisons:
    def __init__(self, contracts: ContractVersions, rewards: RewardStore) -> None:
        self.contracts, self.rewards = contracts, rewards

    def compare(self, name: str, a: int, b: int, last: int = 500, top: int = 10,
                other: str | None = None, tenant: str | None = None) -> StoredComparison:
        """Rewards of ``name@b`` on its latest ``last`` subjects against ``other@a``'s
        (``other``: another contract's name; default the same contract). ``tenant``: that
        tenant's rewards only (its subjects, scores and errors); None: every tenant's."""
        if not 1 <= last <= MAX_SUBJECTS:
            raise Invalid(f"last must be between 1 and {MAX_SUBJECTS}")
        older, newer = self.contracts.get(other or name, a), self.contracts.get(name, b)
        ours = self.rewards.latest_of(name, b, last, tenant)
        theirs = self.rewards.of_subjects(other or name, a, [r.subject_id for r in ours], tenant)
        report = dry_run_report([as_evaluation(r) for r in ours],
                                [as_evaluation(r) for r in theirs], top=top,
                                specialists={r.subject_id: r.specialist for r in ours})
        return StoredComparison(older, newer, len(ours), report)


def as_evaluation(record: RewardRecord) -> Evaluation:
    """A stored reward read back as the evaluation it recorded (stored ones applied)."""
    errors = tuple(EvaluationError(str(e.get("item", "")), str(e.get("message", "")),
                                   str(e.get("kind", "runtime"))) for e in record.errors)
    return Evaluation(record.subject_id, record.contract_hash, True, record.score,
                      dict(record.components), dict(record.gates),
                      not all(record.gates.values()), record.split, record.eligible, errors)
