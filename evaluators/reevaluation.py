"""Re-scoring history under a newly published contract version, with visible progress.

A job is a row in ``reevaluations``, one per (contract, version, from_position): starting
it again returns the same job. It covers the subjects closed by events at positions
``from_position .. to_position``, where ``to_position`` is the log head when the job
started. Together with the live evaluator that is all of history: the version was
published at some position p <= to_position, and every event after p is scored live
under it (see evaluators/worker.py). Overlap is harmless: one reward per (subject,
version) is enforced by the reward store.

Work goes in chunks of positions. Each chunk's rewards and the job's new
``done_position`` commit in one transaction, only if ``done_position`` is right before
the chunk: chunks commit in log order, a restart resumes exactly where the last chunk
ended, and progress (done/to) is always what is durable.

Several processes share a job (the evaluator processes between their polls, a CLI
run): each claims the next chunk nobody is scoring (evaluators/chunk_claims.py: a
PostgreSQL session lock per chunk, freed when its process dies), so consecutive chunks
are scored at once on as many cores, and each waits for the chunk before it to commit
(evaluators/chunk_commits.py). A chunk whose predecessor is left free (its process died)
is given up and claimed again later, from the progress. ``run`` saves each chunk in the
background while it scores its next one (one save in flight, as the live worker saves
its batches: evaluators/saving.py).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection, Engine

from contract.problems import ContractInvalid
from contract.rubric import ExpressionError
from contract.versions import PUBLISHED, ContractVersions, VersionConflict
from evaluators.active import CompiledVersions
from evaluators.chunk_claims import Claim, claim_chunk
from evaluators.chunk_commits import commit_in_order
from evaluators.events import ReevaluationFinished, reevaluation_stream
from evaluators.judging import Judging
from evaluators.reevaluation_model import (
    DEGRADED,
    FAILED,
    RUNNING,
    SUCCEEDED,
    Chunk,
    Job,
    Tally,
    error_summary,
    job_of_row,
)
from evaluators.rewards import RewardStore
from evaluators.saving import BackgroundSave
from evaluators.scoring import Awaiting, score_subjects
from evaluators.subjects import SubjectReader
from evaluators.tables import reevaluations as jobs
from events.model import EventMetadata
from events.store import EventStore
from kernel.db import is_postgres

log = logging.getLogger(__name__)

REEVALUATION_ACTOR = "system:reevaluation"
STALL_S = 60.0  # the longest a scored chunk waits for the progress to move at all


class Reevaluations:
    def __init__(self, engine: Engine, store: EventStore, contracts: ContractVersions,
                 rewards: RewardStore, chunk_positions: int = 2000,
                 degraded_above: float = 0.05, subject_budget_s: float | None = None,
                 judging: Judging | None = None) -> None:
        self.engine, self.store, self.contracts, self.rewards = engine, store, contracts, rewards
        # The judges' verdicts the log holds (a subject missing one waits in the backlog).
        self.judging = judging if judging is not None else Judging(store)
        self.subjects = SubjectReader(store)
        self.chunk_positions = chunk_positions
        self.degraded_above = degraded_above  # error share of applicable subjects
        self.stall_s = STALL_S
        self._versions = CompiledVersions(contracts, subject_budget_s)

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
            job = job_of_row(found_row)
            if created == 1 and job.status != RUNNING:  # nothing to score: finished already
                self._finished(conn, job)
        return job, created == 1

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
        """Score and commit one chunk of ``job_id`` (or of the oldest running job with a
        chunk nobody else is scoring right now): the job as it is after that chunk (or as
        stored, when the chunk was done elsewhere); None when there was nothing to do."""
        candidates = [self.get(job_id)] if job_id else self.jobs(status=RUNNING)
        for job in candidates:
            if job is None or job.status != RUNNING:
                continue
            claim = self._claim(job.job_id)
            if claim is None:
                continue  # every chunk within reach is being scored elsewhere
            try:
                return self._commit(self._chunk(claim)) or self.get(job.job_id)
            finally:
                claim.release()
        return None

    def run(self, job_id: str, on_progress: Callable[[Job], None] | None = None,
            idle: float = 0.2) -> Job:
        """Advance ``job_id`` until it is finished, with whoever else is working on it.

        Each chunk's save (its rewards and the job's progress, one transaction) runs in
        the background while the next free chunk after it is read and scored
        (evaluators/saving.py): one save in flight, chunks claimed in increasing order, so
        this run's chunks commit in log order, each when the job's progress reaches it. A
        failed save is raised before any later chunk is handed over. ``on_progress`` sees
        the job after each chunk this run commits, then (once) as it finished.
        """
        saves: BackgroundSave[Job | None] = BackgroundSave(None)
        in_flight: Claim | None = None
        said: Job | None = None

        def say(job: Job | None) -> None:
            nonlocal said
            if job is not None and on_progress is not None and job != said:
                on_progress(job)
                said = job

        try:
            while True:
                claim = self._claim(job_id, after=in_flight.start if in_flight else 0)
                if claim is None:
                    if in_flight is not None:  # nothing more to claim past it: let it land
                        say(saves.wait())
                        in_flight = None
                        continue
                    job = self.get(job_id)
                    if job is None:
                        raise LookupError(f"re-evaluation job {job_id} does not exist")
                    if job.status != RUNNING:
                        say(job)
                        return job
                    time.sleep(idle)  # other processes hold every chunk within reach
                    continue
                try:
                    chunk = self._chunk(claim)
                    landed = saves.wait() if in_flight is not None else claim.job
                except BaseException:
                    claim.release()
                    raise
                if landed is None:  # the chunk before gave up: start again from the progress
                    claim.release()
                    in_flight = None
                    continue
                if in_flight is not None:
                    say(landed)
                saves.submit(partial(self._save, claim, chunk))
                in_flight = claim
        except BaseException:
            _collect(saves)
            raise
        finally:
            saves.close()

    def _claim(self, job_id: str, after: int = 0) -> Claim | None:
        return claim_chunk(self.engine, lambda: self.get(job_id), self.chunk_positions, after)

    def _save(self, claim: Claim, chunk: Chunk) -> Job | None:
        try:
            return self._commit(chunk)
        finally:
            claim.release()

    def _chunk(self, claim: Claim) -> Chunk:
        """The claimed positions, read and scored."""
        job = claim.job
        try:
            version = self._versions.get(job.contract_name, job.contract_version)
        except (ContractInvalid, ExpressionError) as exc:  # would fail the same way forever
            return Chunk(job.job_id, claim.start, claim.end, [], Tally(),
                         failure=f"{type(exc).__name__}: {exc}")
        # Read and score outside the write transaction: SQLite allows one writer, and the
        # reads would queue behind it; the conditional update keeps the result exact.
        events = self.store.read_all(claim.start - 1, claim.end - claim.start + 1)
        subjects = self.subjects.closed_by(events, {version.subject_kind})
        awaiting: list[Awaiting] = []
        records = score_subjects(subjects, [version], self.judging, awaiting)
        return Chunk(job.job_id, claim.start, claim.end, records, Tally.of(len(subjects), records),
                     awaiting=awaiting)

    def _commit(self, chunk: Chunk) -> Job | None:
        """``commit_in_order`` (evaluators/chunk_commits.py) for this worker's chunk."""
        return commit_in_order(self.engine, self.rewards, chunk, self._verdict, self.stall_s,
                               self._finished)

    def _finished(self, conn: Connection, job: Job) -> None:
        """The job's end in the log (``reevaluation.finished``), in the transaction that ends it."""
        event = ReevaluationFinished(
            job_id=job.job_id, contract_name=job.contract_name, contract_version=job.contract_version,
            status=job.status, from_position=job.from_position, to_position=job.to_position,
            subjects_scored=job.subjects_scored, subjects_errored=job.subjects_errored,
            subjects_skipped=job.subjects_skipped)
        self.store.append([event.new_event(reevaluation_stream(job.job_id),
                                           EventMetadata(actor=REEVALUATION_ACTOR))], conn=conn)

    def _verdict(self, tally: Tally) -> tuple[str, str | None]:
        """Failed when errors dominate the applicable subjects, degraded above the
        threshold: a re-scoring whose rewards are mostly errors is not a success. The
        error column then sums it up, with the first error as an example."""
        applicable = tally.scored + tally.errored
        if not tally.errored:
            return SUCCEEDED, None
        summary = error_summary(tally)
        if tally.errored > tally.scored:
            return FAILED, summary
        if tally.errored / applicable > self.degraded_above:
            return DEGRADED, summary
        return SUCCEEDED, summary


def _collect(saves: BackgroundSave[Any]) -> None:
    """After a failure: let the save in flight end (it commits its chunk or nothing)."""
    try:
        saves.wait()
    except Exception as exc:  # noqa: BLE001 (the failure being raised says more)
        log.warning("the re-evaluation chunk being saved was not stored either (%s)", exc)
