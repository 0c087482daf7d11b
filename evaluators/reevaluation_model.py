"""A re-evaluation job's state, a scored chunk of it and the running counts. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from evaluators.model import RewardRecord
from kernel.clock import utc


@dataclass(frozen=True)
class Job:
    job_id: str
    contract_name: str
    contract_version: int
    from_position: int
    to_position: int
    done_position: int
    subjects_scored: int  # applicable and scored
    subjects_errored: int  # applicable, but the rubric failed: a reward with errors, no score
    subjects_skipped: int  # closed in range, but the version does not apply to them
    status: str
    error: str | None
    started_at: datetime
    updated_at: datetime

    @property
    def progress(self) -> float:
        """Share of the job's positions done, 0..1."""
        total = self.to_position - self.from_position + 1
        if total <= 0:
            return 1.0
        return min(1.0, max(0.0, (self.done_position - self.from_position + 1) / total))

    def to_json(self) -> dict[str, Any]:
        body = {key: getattr(self, key) for key in self.__dataclass_fields__}
        body["started_at"] = utc(self.started_at).isoformat()
        body["updated_at"] = utc(self.updated_at).isoformat()
        body["progress"] = round(self.progress, 4)
        return body


@dataclass(frozen=True)
class Chunk:
    """A scored chunk: the job's new progress columns and the rewards that go with them."""

    values: dict[str, Any]
    records: list[RewardRecord]

    @classmethod
    def of(cls, done: int, status: str, error: str | None, records: list[RewardRecord],
           tally: Tally) -> Chunk:
        return cls({"done_position": done, "subjects_scored": tally.scored,
                    "subjects_errored": tally.errored, "subjects_skipped": tally.skipped,
                    "status": status, "error": error, "updated_at": datetime.now(UTC)}, records)

    def after(self, job: Job) -> Job:
        """``job`` as this chunk's commit leaves it."""
        return Job(**{**job.__dict__, **self.values})


@dataclass(frozen=True)
class Tally:
    """A job's running counts, with one error message to show why."""

    scored: int = 0
    errored: int = 0
    skipped: int = 0
    sample: str | None = None

    @classmethod
    def of(cls, job: Job, closed: int, records: list[RewardRecord]) -> Tally:
        errored = [r for r in records if r.errors]
        first = errored[0].errors[0] if errored else None
        sample = f"{first.get('item')}: {first.get('message')}" if first else None
        return cls(job.subjects_scored + len(records) - len(errored),
                   job.subjects_errored + len(errored),
                   job.subjects_skipped + closed - len(records), sample)


def job_of_row(row: Any) -> Job:
    """A row of the jobs table as a ``Job``."""
    mapping = row._mapping
    return Job(**{key: mapping[key] for key in Job.__dataclass_fields__})
