"""Committing a scored chunk of a re-evaluation job, in log order.

Chunks of one job may be scored at once by several processes (evaluators/chunk_claims.py),
but they commit one after the other: a chunk's rewards and the job's new progress go in
one transaction only when ``done_position`` is right before the chunk, and its counts are
added in SQL (each process knows only its own chunk's). A chunk scored ahead waits for the
chunks before it, and gives up (to be claimed again from the progress) when nobody holds
the chunk before it for ``GIVE_UP_S`` while the progress stands still (its process died),
or when the progress stands still for ``stall_s`` even so (its process hangs: the waiter,
an evaluator between polls, goes back to the live log).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Connection, Engine

from evaluators.chunk_claims import held_elsewhere
from evaluators.reevaluation_model import FAILED, RUNNING, Chunk, Job, Tally, job_of_row
from evaluators.rewards import RewardStore
from evaluators.tables import reevaluations as jobs

WAIT_S = 0.01  # how often a scored chunk looks whether the job's progress has reached it
# How long the chunk before a scored one may stand free, the progress not moving, before
# the scored chunk is given up (its scorer died; a live one holds it until its commit).
GIVE_UP_S = 1.0

Verdict = Callable[[Tally], tuple[str, str | None]]  # a finished job's status and error
Finished = Callable[[Connection, Job], None]  # records a job's end, in the transaction that ends it


def commit_in_order(engine: Engine, rewards: RewardStore, chunk: Chunk, verdict: Verdict,
                    stall_s: float, finished: Finished | None = None) -> Job | None:
    """The chunk committed once the job's progress has reached it: the job as committed,
    or as found when it moved past the chunk (done elsewhere) or stopped running; None
    when the chunk is given up (see the module docstring)."""
    stood_at, stood_since, free_since = -1, 0.0, None
    committed = commit_now(engine, rewards, chunk, verdict, finished)  # (most chunks: at once)
    while committed is None:
        job = _job(engine, chunk.job_id)
        if job is None or job.status != RUNNING or job.done_position >= chunk.start:
            return job  # done elsewhere, or stopped
        if job.done_position == chunk.start - 1:  # the chunk before has committed
            committed = commit_now(engine, rewards, chunk, verdict, finished)
            continue
        now = time.monotonic()
        if job.done_position != stood_at:
            stood_at, stood_since, free_since = job.done_position, now, None
        if held_elsewhere(engine, job.job_id, job.done_position + 1):
            free_since = None
        elif free_since is None:
            free_since = now
        if free_since is not None and now - free_since >= GIVE_UP_S or now - stood_since >= stall_s:
            return None
        time.sleep(WAIT_S)
    return committed


def commit_now(engine: Engine, rewards: RewardStore, chunk: Chunk, verdict: Verdict,
               finished: Finished | None = None) -> Job | None:
    """The commit if the job's progress is right before the chunk (or the chunk fails the
    job); None, with nothing written, otherwise. The last chunk also sets the job's
    verdict from its whole counts."""
    with engine.connect() as conn, conn.begin() as transaction:
        running = (jobs.c.job_id == chunk.job_id) & (jobs.c.status == RUNNING)
        if chunk.failure is not None:
            moved = conn.execute(jobs.update().where(running).values(
                status=FAILED, error=chunk.failure, updated_at=datetime.now(UTC))).rowcount
        else:
            moved = conn.execute(jobs.update().where(
                running, jobs.c.done_position == chunk.start - 1).values(**_progress(chunk))).rowcount
        if moved != 1:
            transaction.rollback()
            return None
        rewards.record(chunk.records, conn, chunk.awaiting)
        job = _job(engine, chunk.job_id, conn)
        assert job is not None  # (updated just now, in this transaction)
        if job.status == RUNNING and job.done_position >= job.to_position:
            status, error = verdict(Tally.of_job(job))
            conn.execute(jobs.update().where(jobs.c.job_id == job.job_id).values(status=status, error=error))
            job = replace(job, status=status, error=error)
        if job.status != RUNNING and finished is not None:  # this commit ended the job
            finished(conn, job)
    return job


def _job(engine: Engine, job_id: str, conn: Connection | None = None) -> Job | None:
    query = select(jobs).where(jobs.c.job_id == job_id)
    if conn is not None:
        row = conn.execute(query).first()
    else:
        with engine.connect() as own:
            row = own.execute(query).first()
    return job_of_row(row) if row else None


def _progress(chunk: Chunk) -> dict[str, Any]:
    """The job's columns as the chunk's commit moves them: the counts are added in SQL (the
    chunks of a job may be scored in several processes, each knowing only its own)."""
    tally, c = chunk.tally, jobs.c
    return {"done_position": chunk.end, "subjects_scored": c.subjects_scored + tally.scored,
            "subjects_errored": c.subjects_errored + tally.errored,
            "subjects_skipped": c.subjects_skipped + tally.skipped,
            "error": func.coalesce(c.error, tally.sample), "updated_at": datetime.now(UTC)}
