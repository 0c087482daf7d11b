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
last chunk ended, and progress (done/to) is always what is durable. ``run`` saves each
chunk in the background while it reads and scores the next (one save in flight, in
order, as the live worker saves its batches: evaluators/saving.py). A chunk commits only
if ``done_position`` is still what it was read as, so any number of evaluator processes
and a CLI run can share one job without scoring a chunk twice; on PostgreSQL an advisory
lock per job also keeps them from computing the same chunk in parallel.
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial

from sqlalchemy import select, text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection, Engine

from contract.problems import ContractInvalid
from contract.rubric import ExpressionError
from contract.versions import PUBLISHED, ContractVersions, VersionConflict
from evaluators.active import compile_version
from evaluators.reevaluation_model import Chunk, Job, Tally, job_of_row
from evaluators.rewards import RewardStore
from evaluators.saving import BackgroundSave
from evaluators.scoring import ScoringVersion, score_subjects
from evaluators.subjects import SubjectReader
from evaluators.tables import reevaluations as jobs
from events.store import EventStore
from kernel.db import is_postgres

log = logging.getLogger(__name__)

RUNNING, SUCCEEDED, DEGRADED, FAILED = "running", "succeeded", "degraded", "failed"
JOB_LOCK_CLASS = 0x48435052  # "HCPR": the class half of the two-key advisory lock of a job


class Reevaluations:
    def __init__(self, engine: Engine, store: EventStore, contracts: ContractVersions,
                 rewards: RewardStore, chunk_positions: int = 2000,
                 degraded_above: float = 0.05, subject_budget_s: float | None = None) -> None:
        self.engine, self.store, self.contracts, self.rewards = engine, store, contracts, rewards
        self.subjects = SubjectReader(store)
        self.chunk_positions, self.subject_budget_s = chunk_positions, subject_budget_s
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
        return job_of_row(found_row), created == 1

    def jobs(self, name: str | None = None, version: int | None = None,
             status: str | None = None) -> list[Job]:
        query = select(jobs).order_by(jobs.c.started_at, jobs.c.job_id)
        for column, value in ((jobs.c.contract_name, name), (jobs.c.contract_version, version),
                              (jobs.c.status, status)):
            if value is not None:
                query = query.where(column == value)
        with self.engine.connect() as conn:
            return [job_of_row(row) for row in conn.execute(query)]

    def get(self, job_id: str) -> Job | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(jobs).where(jobs.c.job_id == job_id)).first()
        return job_of_row(row) if row else None

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
        """Advance ``job_id`` until it is finished, whoever else is working on it. While
        this process holds the job, each chunk's save runs in the background while the
        next chunk is read and scored (``_advance_held``)."""
        while True:
            held = self._run_held(job_id, on_progress)
            job = held or self.get(job_id)
            if job is None:
                raise LookupError(f"re-evaluation job {job_id} does not exist")
            if held is None and on_progress is not None:
                on_progress(job)
            if job.status != RUNNING:
                return job
            if held is None:
                time.sleep(idle)  # another process is advancing this chunk; wait for it

    def _run_held(self, job_id: str, on_progress: Callable[[Job], None] | None) -> Job | None:
        """Chunks of ``job_id`` under its lock; None when another process holds it."""
        with self.engine.connect() as guard:
            if not _try_lock(guard, job_id):
                return None
            try:
                return self._advance_held(job_id, on_progress)
            finally:
                _unlock(guard, job_id)

    def _advance_held(self, job_id: str, on_progress: Callable[[Job], None] | None) -> Job | None:
        """Chunk after chunk (the lock held), each one's rewards and progress committing in
        the background while the next is read and scored (evaluators/saving.py): one save
        in flight, each conditional on the progress the one before leaves, so chunks
        commit in order or not at all; a save that finds the job moved (another process,
        SQLite has no lock) ends the run here with the job as stored. The job as the last
        save left it."""
        job = self.get(job_id)  # under the lock: another process may have moved it
        saves: BackgroundSave[bool] = BackgroundSave(True)
        pending: Job | None = None  # the job as the save in flight leaves it
        try:
            while job is not None and job.status == RUNNING:
                chunk = self._chunk(job)
                if not saves.wait():
                    return self.get(job_id)
                if pending is not None and on_progress is not None:
                    on_progress(pending)
                saves.submit(partial(self._commit, job, chunk))
                job = pending = chunk.after(job)
            if not saves.wait():
                return self.get(job_id)
        except BaseException:
            _collect(saves)
            raise
        finally:
            saves.close()
        if job is not None and on_progress is not None:
            on_progress(job)  # as the last chunk left it, or as found when there was none
        return job

    def _advance(self, job_id: str) -> Job | None:
        job = self.get(job_id)  # re-read under the lock: another process may have moved it
        if job is None or job.status != RUNNING:
            return job
        chunk = self._chunk(job)
        return chunk.after(job) if self._commit(job, chunk) else self.get(job.job_id)

    def _chunk(self, job: Job) -> Chunk:
        """The next chunk of a running job, read and scored: its rewards and the job's
        progress after it."""
        try:
            version = self._version(job.contract_name, job.contract_version)
        except (ContractInvalid, ExpressionError) as exc:  # would fail the same way forever
            counts = Tally(job.subjects_scored, job.subjects_errored, job.subjects_skipped)
            return Chunk.of(job.done_position, FAILED, f"{type(exc).__name__}: {exc}", [], counts)
        upto = min(job.done_position + self.chunk_positions, job.to_position)
        # Read and score outside the write transaction: SQLite allows one writer, and the
        # reads would queue behind it; the conditional update keeps the result exact.
        events = self.store.read_all(job.done_position, upto - job.done_position)
        subjects = self.subjects.closed_by(events, {version.subject_kind})
        records = score_subjects(subjects, [version])
        tally = Tally.of(job, len(subjects), records)
        if upto < job.to_position:
            return Chunk.of(upto, RUNNING, job.error or tally.sample, records, tally)
        status, error = self._verdict(tally, job.error or tally.sample)
        return Chunk.of(upto, status, error, records, tally)

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

    def _commit(self, job: Job, chunk: Chunk) -> bool:
        """The chunk's rewards and progress in one transaction, only if nobody advanced the
        job since ``job`` was read (the lock makes that rare; SQLite has no such lock)."""
        with self.engine.connect() as conn, conn.begin() as transaction:
            moved = conn.execute(jobs.update().where(
                jobs.c.job_id == job.job_id, jobs.c.done_position == job.done_position,
                jobs.c.status == RUNNING).values(**chunk.values)).rowcount
            if moved != 1:
                transaction.rollback()
                return False
            self.rewards.record(chunk.records, conn)
        return True

    def _version(self, name: str, version: int) -> ScoringVersion:
        key = (name, version)
        if key not in self._compiled:
            self._compiled[key] = compile_version(self.contracts.get(name, version),
                                                  self.subject_budget_s)
        return self._compiled[key]


def _collect(saves: BackgroundSave[bool]) -> None:
    """After a failure: let the save in flight end (it commits its chunk or nothing)."""
    try:
        saves.wait()
    except Exception as exc:  # noqa: BLE001 (the failure being raised says more)
        log.warning("the re-evaluation chunk being saved was not stored either (%s)", exc)


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
