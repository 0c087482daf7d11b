"""A re-evaluation job's state, a scored chunk of it and the counts. Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from contract.error_text import message_without_event_text
from evaluators.model import RewardRecord
from kernel.clock import utc

RUNNING, SUCCEEDED, DEGRADED, FAILED = "running", "succeeded", "degraded", "failed"


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

    def without_event_text(self) -> Job:
        """The job as a key that may not read every tenant's events sees it: a job scores
        every tenant's history, and its error's example may quote any of them."""
        return replace(self, error=error_without_event_text(self.error))

    def to_json(self) -> dict[str, Any]:
        body = {key: getattr(self, key) for key in self.__dataclass_fields__}
        body["started_at"] = utc(self.started_at).isoformat()
        body["updated_at"] = utc(self.updated_at).isoformat()
        body["progress"] = round(self.progress, 4)
        return body


@dataclass(frozen=True)
class Chunk:
    """Positions ``start``..``end`` of a job, read and scored: the rewards, and what they
    add to the job's counts. ``failure``: the version cannot score at all (the job fails)."""

    job_id: str
    start: int
    end: int
    records: list[RewardRecord]
    tally: Tally
    failure: str | None = None
    awaiting: list[Any] = field(default_factory=list)  # scoring.Awaiting: waiting for a judge


@dataclass(frozen=True)
class Tally:
    """Counts of subjects (a chunk's, or a whole job's), with one error message to show why."""

    scored: int = 0
    errored: int = 0
    skipped: int = 0
    sample: str | None = None

    @classmethod
    def of(cls, closed: int, records: list[RewardRecord]) -> Tally:
        """A chunk's: ``closed`` subjects closed in it, ``records`` their rewards."""
        errored = [r for r in records if r.errors]
        first = errored[0].errors[0] if errored else None
        sample = f"{first.get('item')}: {first.get('message')}" if first else None
        return cls(len(records) - len(errored), len(errored), closed - len(records), sample)

    @classmethod
    def of_job(cls, job: Job) -> Tally:
        return cls(job.subjects_scored, job.subjects_errored, job.subjects_skipped, job.error)


def error_summary(tally: Tally) -> str:
    """A finished job's error column: how many errored, and the first error as an example."""
    applicable = tally.scored + tally.errored
    return (f"{tally.errored} of {applicable} applicable subjects errored"
            + (f" (e.g. {tally.sample})" if tally.sample else ""))


# ``error_summary``'s example, "item: message", the item being e.g. criterion:<id>.
_EXAMPLE = re.compile(r"(?P<head>.*) \(e\.g\. (?P<item>\S*?): (?P<message>.*)\)", re.S)


def error_without_event_text(error: str | None) -> str | None:
    """``error_summary``'s text with its example's message withheld unless the rubric made
    it (``contract.error_text``); a job's other errors name the contract, not events."""
    found = _EXAMPLE.fullmatch(error or "")
    if found is None:
        return error
    return f"{found['head']} (e.g. {message_without_event_text(found['item'], found['message'])})"


def job_of_row(row: Any) -> Job:
    """A row of the jobs table as a ``Job``."""
    mapping = row._mapping
    return Job(**{key: mapping[key] for key in Job.__dataclass_fields__})
