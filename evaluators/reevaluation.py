"""Re-scoring history under a newly published contract version, with visible progress.

A job is a row in ``reevaluations``, one per (contract, version, from_position): starting
it again returns the same job. It covers the subjects closed by events at positions
``from_position .. to_position``, where ``to_position`` is the log head when the job
started. Together with the live evaluator that is all of history: the version was
published at some position p <= to_position, and every event after p is scored live
under it (see evaluators/worker.py). Overlap is harmless: one reward per (subject,
version) is enforced by the reward store.

Work goes in chunks of positions. Each chunk's rewards and the job's new
``done_position`` commit in one transaction, so a restart resumes exactly where the
last chunk ended, and progress (done/to) is always what is durable. A chunk commits only
if ``done_position`` is still what it was read as, so any number of evaluator processes
and a CLI run can share one job without scoring a chunk twice; on PostgreSQL an advisory
lock per job also keeps them from computing the same chunk in parallel.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select, text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection, Engine

from contract.problems import ContractInvalid
from contract.rubric import ExpressionError
from contract.versions import PUBLISHED, ContractVersions, VersionConflict
from evaluators.active import compile_version
from evaluators.model import RewardRecord
from evaluators.rewards import RewardStore
from evaluators.scoring import ScoringVersion, score_subjects
from evaluators.subjects import SubjectReader
from evaluators.tables import reevaluations as jobs
from events.store import EventStore
from kernel.clock import utc
from kernel.db import is_postgres

RUNNING, SUCCEEDED, DEGRADED, FAILED = "running", "succeeded", "degraded", "failed"
JOB_LOCK_CLASS = 0x48435052  # "HCPR": the class half of the two-key advisory lock of a job


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


class Reevaluations:
    def __init__(self, engine: Engine, store: EventStore, contracts: ContractVersions,
                 rewards: RewardStore, chunk_positions: int = 2000,
                 degraded_above: float = 0.05) -> None:
        self.engine, self.store, self.contracts, self.rewards = engine, store, contracts, rewards
        self.subjects = SubjectReader(store)
        self.chunk_positions = chunk_positions
        self.degraded_above = degraded_above  # error share of applicable subjects
        self._compiled: dict[tuple[str, int], ScoringVersion] = {}

    def start(self, name: str, version: int, from_position: int = 1) -> Job:
        """The job for (name, version, from_position), created if new (``to_position`` =
        the log head now). Only a published version can re-score history."""
        return self.ensure(name, version, from_position)[0]

    def start_new(self, name: str, version: int, from_position: int = 1) -> Job | None:
        """Like ``start``, but None when the job already existed (nothing was started)."""
        job, created = self.ensure(name, version, from_position)
        return job if created else None

    def ensure(self, name: str, version: int, from_position: int = 1) -> tuple[Job, bool]:
        """The job and whether this call created it."""
        found = self.contracts.get(name, version)  # raises VersionNotFound
        if found.status != PUBLISHED:
            raise VersionConflict(f"{found.ref} is {found.status}: only a published version "
                                  "re-scores history (use a dry run for a draft)")
        from_position = max(1, from_position)
        now = datetime.now(UTC)
        head = self.store.head()
        row = {"job_id": str(uuid.uuid4()), "contract_name": name, "contract_version": version,
               "from_position": from_position, "to_position": max(head, from_position - 1),
               "done_position": from_position - 1, "subjects_scored": 0, "subjects_errored": 0,
               "subjects_skipped": 0, "status": RUNNING if head >= from_position else SUCCEEDED,
               "error": None, "started_at": now, "updated_at": now}
        with self.engine.begin() as conn:
            insert = pg_insert if is_postgres(conn) else sqlite_insert
            created = conn.execute(insert(jobs).values(**row).on_conflict_do_nothing(
                index_elements=["contract_name", "contract_version", "from_position"])).rowcount
            found_row = conn.execute(select(jobs).where(
                jobs.c.contract_name == name, jobs.c.contract_version == version,
                jobs.c.from_position == from_position)).one()
        return _job(found_row), created == 1

    def jobs(self, name: str | None = None, version: int | None = None,
             status: str | None = None) -> list[Job]:
        query = select(jobs).order_by(jobs.c.started_at, jobs.c.job_id)
        for column, value in ((jobs.c.contract_name, name), (jobs.c.contract_version, version),
                              (jobs.c.status, status)):
            if value is not None:
                query = query.where(column == value)
        with self.engine.connect() as conn:
            return [_job(row) for row in conn.execute(query)]

    def get(self, job_id: str) -> Job | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(jobs).where(jobs.c.job_id == job_id)).first()
        return _job(row) if row else None

    def step(self, job_id: str | None = None) -> Job | None:
        """Advance one chunk of ``job_id`` (or of the oldest running job nobody else is
        advancing right now); None when there was nothing to do."""
        candidates = [self.get(job_id)] if job_id else self.jobs(status=RUNNING)
        for job in candidates:
            if job is None or job.status != RUNNING:
                continue
            with self.engine.connect() as guard:
                if not _try_lock(guard, job.job_id):
                    continue  # another process is on this job: leave it the chunk
                try:
                    return self._advance(job.job_id)
                finally:
                    _unlock(guard, job.job_id)
        return None

    def run(self, job_id: str, on_progress: Callable[[Job], None] | None = None,
            idle: float = 0.2) -> Job:
        """Advance ``job_id`` until it is finished, whoever else is working on it."""
        while True:
            stepped = self.step(job_id)
            job = stepped or self.get(job_id)
            if job is None:
                raise LookupError(f"re-evaluation job {job_id} does not exist")
            if on_progress is not None:
                on_progress(job)
            if job.status != RUNNING:
                return job
            if stepped is None:
                time.sleep(idle)  # another process is advancing this chunk; wait for it

    def _advance(self, job_id: str) -> Job | None:
        job = self.get(job_id)  # re-read under the lock: another process may have moved it
        if job is None or job.status != RUNNING:
            return job
        try:
            version = self._version(job.contract_name, job.contract_version)
        except (ContractInvalid, ExpressionError) as exc:  # would fail the same way forever
            counts = Tally(job.subjects_scored, job.subjects_errored, job.subjects_skipped)
            return self._save(job, job.done_position, FAILED, f"{type(exc).__name__}: {exc}", [],
                              counts)
        upto = min(job.done_position + self.chunk_positions, job.to_position)
        # Read and score outside the write transaction: SQLite allows one writer, and the
        # reads would queue behind it; the conditional update below keeps the result exact.
        events = self.store.read_all(job.done_position, upto - job.done_position)
        subjects = self.subjects.closed_by(events, {version.subject_kind})
        records = score_subjects(subjects, [version])
        tally = Tally.of(job, len(subjects), records)
        if upto < job.to_position:
            return self._save(job, upto, RUNNING, job.error or tally.sample, records, tally)
        status, error = self._verdict(tally, job.error or tally.sample)
        return self._save(job, upto, status, error, records, tally)

    def _verdict(self, tally: Tally, sample: str | None) -> tuple[str, str | None]:
        """Failed when errors dominate the applicable subjects, degraded above the
        threshold: a re-scoring whose rewards are mostly errors is not a success."""
        applicable = tally.scored + tally.errored
        if not tally.errored:
            return SUCCEEDED, None
        summary = (f"{tally.errored} of {applicable} applicable subjects errored"
                   + (f" (e.g. {sample})" if sample else ""))
        if tally.errored > tally.scored:
            return FAILED, summary
        if tally.errored / applicable > self.degraded_above:
            return DEGRADED, summary
        return SUCCEEDED, summary

    def _save(self, job: Job, done: int, status: str, error: str | None,
              records: list[RewardRecord], tally: Tally) -> Job | None:
        values = {"done_position": done, "subjects_scored": tally.scored,
                  "subjects_errored": tally.errored, "subjects_skipped": tally.skipped,
                  "status": status, "error": error, "updated_at": datetime.now(UTC)}
        with self.engine.connect() as conn, conn.begin() as transaction:
            # Only if nobody advanced the job since it was read (the lock makes that rare;
            # SQLite has no such lock): then this chunk's rewards and progress commit together.
            moved = conn.execute(jobs.update().where(
                jobs.c.job_id == job.job_id, jobs.c.done_position == job.done_position,
                jobs.c.status == RUNNING).values(**values)).rowcount
            if moved != 1:
                transaction.rollback()
                return self.get(job.job_id)
            self.rewards.record(records, conn)
        return Job(**{**job.__dict__, **values})

    def _version(self, name: str, version: int) -> ScoringVersion:
        key = (name, version)
        if key not in self._compiled:
            self._compiled[key] = compile_version(self.contracts.get(name, version))
        return self._compiled[key]


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


def _lock_key(job_id: str) -> int:
    return int.from_bytes(hashlib.sha256(job_id.encode()).digest()[:4], "big", signed=True)


def _try_lock(conn: Connection, job_id: str) -> bool:
    # A session lock on PostgreSQL, released by _unlock or when the connection dies with
    # its process, so a killed worker never leaves a job claimed. Two-key form: its key
    # space is apart from the single-key locks of the event and reward stores.
    if not is_postgres(conn):
        return True
    return bool(conn.execute(text("SELECT pg_try_advisory_lock(:c, :k)"),
                             {"c": JOB_LOCK_CLASS, "k": _lock_key(job_id)}).scalar())


def _unlock(conn: Connection, job_id: str) -> None:
    if is_postgres(conn):
        conn.execute(text("SELECT pg_advisory_unlock(:c, :k)"),
                     {"c": JOB_LOCK_CLASS, "k": _lock_key(job_id)})
        conn.commit()


def _job(row: Any) -> Job:
    mapping = row._mapping
    return Job(**{key: mapping[key] for key in Job.__dataclass_fields__})
