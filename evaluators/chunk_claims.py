"""Which process scores which chunk of a re-evaluation job: session advisory locks.

A job is cut into chunks of ``chunk_positions`` positions, counted from its progress
(``done_position``): every commit moves the progress by one whole chunk, so processes that
read the job at different times still cut it at the same places. A process claims the
first chunk of the next ``LOOKAHEAD`` that nobody holds, by taking a PostgreSQL session
lock on (job, first position of the chunk); several processes thus score consecutive
chunks of one job at once, and commit them in log order (evaluators/reevaluation.py).

A lock lives on a connection of its own, held from the claim until the chunk's save is
over, and dies with the connection of a killed process: its chunk is free again. SQLite
has no such locks: every claim succeeds, and the conditional commit alone keeps the
result exact (a second process only repeats work).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from evaluators.reevaluation_model import RUNNING, Job
from kernel.db import is_postgres

log = logging.getLogger(__name__)

# The class half of the two-key advisory locks of chunks ("HCPR"): apart from the
# single-key locks of the event and reward stores.
CHUNK_LOCK_CLASS = 0x48435052
# How many chunks past its progress a job is claimed at most: as many processes can score
# one job at once. Each holds its rewards until the chunks before it have committed.
LOOKAHEAD = 8


@dataclass
class Claim:
    """Positions ``start``..``end`` of ``job`` (as read once the chunk was locked), held
    by ``guard``'s session lock until ``release``."""

    job: Job
    start: int
    end: int
    guard: Connection

    def release(self) -> None:
        _release(self.guard, self.job.job_id, self.start)


def claim_chunk(engine: Engine, read_job: Callable[[], Job | None], chunk_positions: int,
                after: int = 0) -> Claim | None:
    """The first free chunk of the job that starts after position ``after``, locked; None
    when the job is not running or every chunk within ``LOOKAHEAD`` is taken.

    The job is read again once a chunk is locked: a chunk whose lock was just released
    may also have just been committed (then the claim starts again from the new progress)."""
    job = read_job()
    for _ in range(LOOKAHEAD):  # a new start only after some chunk committed meanwhile
        if job is None or job.status != RUNNING:
            return None
        for index in range(LOOKAHEAD):
            start = job.done_position + 1 + index * chunk_positions
            if start > job.to_position:
                return None
            if start <= after:
                continue
            guard = engine.connect()
            try:
                if not _try_lock(guard, job.job_id, start):
                    guard.close()
                    continue
                fresh = read_job()
            except BaseException:
                _release(guard, job.job_id, start)  # (a lock it may hold ends with it)
                raise
            if fresh is not None and fresh.status == RUNNING and fresh.done_position < start:
                return Claim(fresh, start, min(start + chunk_positions - 1, fresh.to_position), guard)
            _release(guard, job.job_id, start)
            job = fresh
            break
        else:
            return None  # every chunk within reach is someone else's
    return None


def held_elsewhere(engine: Engine, job_id: str, start: int) -> bool:
    """Whether another session holds the chunk of ``job_id`` that starts at ``start``
    (on SQLite, never)."""
    if not is_postgres(engine):
        return False
    probe = engine.connect()
    try:
        taken = _try_lock(probe, job_id, start)
    except BaseException:
        probe.close()
        raise
    if not taken:
        probe.close()
        return True
    _release(probe, job_id, start)
    return False


def _release(guard: Connection, job_id: str, start: int) -> None:
    """Unlock and give the connection back; if the unlock fails, the connection is
    closed for good instead (its session, and a lock it may still hold, end with it: a
    pooled connection must never carry a chunk's lock to its next user)."""
    try:
        _unlock(guard, job_id, start)
    except Exception as exc:  # noqa: BLE001 (released either way; said, not raised)
        log.warning("unlocking chunk %s of job %s failed (%s): dropping its connection", start, job_id, exc)
        guard.invalidate()
    finally:
        guard.close()


def chunk_lock_key(job_id: str, start: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{job_id}/{start}".encode()).digest()[:4], "big", signed=True)


def _try_lock(conn: Connection, job_id: str, start: int) -> bool:
    if not is_postgres(conn):
        return True
    taken = bool(conn.execute(text("SELECT pg_try_advisory_lock(:c, :k)"),
                              {"c": CHUNK_LOCK_CLASS, "k": chunk_lock_key(job_id, start)}).scalar())
    conn.commit()  # (the statement's implicit transaction: the session lock outlives it)
    return taken


def _unlock(conn: Connection, job_id: str, start: int) -> None:
    if is_postgres(conn):
        conn.execute(text("SELECT pg_advisory_unlock(:c, :k)"),
                     {"c": CHUNK_LOCK_CLASS, "k": chunk_lock_key(job_id, start)})
        conn.commit()
