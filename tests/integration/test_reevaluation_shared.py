"""Several processes share one re-evaluation job chunk by chunk (evaluators/chunk_claims.py):
each scores the chunks nobody else holds, chunks commit in log order, every reward is
stored once, and a chunk left by a dead process is taken up again. PostgreSQL (its
session locks are the claims); each "process" here is a thread with its own connections,
so its locks are its own as another process's would be."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from sqlalchemy import text

from evaluators import chunk_claims
from evaluators import reevaluation as jobs_module
from evaluators.chunk_claims import CHUNK_LOCK_CLASS, chunk_lock_key, claim_chunk, held_elsewhere
from evaluators.chunk_commits import GIVE_UP_S
from evaluators.reevaluation import Job
from hcp.bootstrap import Container
from kernel.db import make_engine
from tests.integration.test_reevaluation_pipeline import CHUNK, CONVERSATIONS, jobs_of, seeded, stored


@pytest.fixture
def container(postgres_url: str) -> Iterator[Container]:
    built = seeded(postgres_url)
    yield built
    built.close()


def slow_scoring(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """Scoring a chunk takes ``seconds`` at least: long enough for two runners to overlap."""
    real = jobs_module.score_subjects

    def slow(*args: object) -> object:
        time.sleep(seconds)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(jobs_module, "score_subjects", slow)


def test_two_runners_score_different_chunks_and_commit_them_in_order(
        container: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    slow_scoring(monkeypatch, 0.2)
    job = jobs_of(container).start("default", 1)
    committed: dict[int, list[int]] = {0: [], 1: []}
    results: list[Job] = []

    def runner(index: int) -> None:
        results.append(jobs_of(container).run(job.job_id, idle=0.01,
                                              on_progress=lambda j: committed[index].append(j.done_position)))

    threads = [threading.Thread(target=runner, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert [r.status for r in results] == ["succeeded", "succeeded"]
    assert results[0].subjects_scored == 2 * CONVERSATIONS
    # Each runner committed chunks of its own, and between them every chunk once (both
    # say the finished job at the end, whoever committed its last chunk).
    ends = {min(end, job.to_position) for end in range(CHUNK, job.to_position + CHUNK, CHUNK)}
    mine = [set(committed[i]) - {job.to_position} for i in range(2)]
    assert mine[0] and mine[1] and mine[0] | mine[1] | {job.to_position} == ends
    assert not mine[0] & mine[1]
    assert committed[0][-1] == committed[1][-1] == job.to_position
    assert all(c == sorted(c) for c in committed.values())  # each in log order
    rewards = stored(container)
    assert [p for p, _ in rewards] == list(range(1, 2 * CONVERSATIONS + 1))
    assert len({s for _, s in rewards}) == 2 * CONVERSATIONS


def test_steps_of_two_workers_take_consecutive_chunks(container: Container,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """As evaluator processes do between their polls: one chunk a step, each its own."""
    slow_scoring(monkeypatch, 0.2)
    job = jobs_of(container).start("default", 1)
    after: list[Job | None] = [None, None]

    def step(index: int) -> None:
        after[index] = jobs_of(container).step()

    threads = [threading.Thread(target=step, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    now = jobs_of(container).get(job.job_id)
    assert now is not None and now.done_position == 2 * CHUNK  # two chunks, one each
    assert sorted(j.done_position for j in after if j is not None) == [CHUNK, 2 * CHUNK]
    assert len(stored(container)) == 4


def test_a_chunk_whose_scorer_died_is_taken_up_again(container: Container) -> None:
    """A process scoring the first chunk dies (its connection, and so its lock, goes): a
    runner that scored the chunk after it gives that one up, then does both."""
    job = jobs_of(container).start("default", 1)
    dying = make_engine(container.settings.database_url).connect()
    dying.execute(text("SELECT pg_advisory_lock(:c, :k)"),
                  {"c": CHUNK_LOCK_CLASS, "k": chunk_lock_key(job.job_id, 1)})
    dying.commit()
    results: list[Job] = []
    runner = threading.Thread(target=lambda: results.append(jobs_of(container).run(job.job_id, idle=0.01)))
    runner.start()
    time.sleep(0.5)
    assert jobs_of(container).get(job.job_id).done_position == 0  # type: ignore[union-attr]  # waiting on chunk 1
    dying.invalidate()  # the process dies: PostgreSQL ends its session, and its lock
    died = time.monotonic()
    runner.join(30)

    assert [r.status for r in results] == ["succeeded"]
    # Taken up once the chunk stood free for GIVE_UP_S, not once per chunk scored ahead.
    assert time.monotonic() - died < 3 * GIVE_UP_S
    assert results[0].subjects_scored == 2 * CONVERSATIONS
    assert [p for p, _ in stored(container)] == list(range(1, 2 * CONVERSATIONS + 1))


def test_a_step_waits_for_a_hung_scorer_only_so_long(container: Container) -> None:
    """The scorer of the first chunk holds it and never commits: a worker's step that
    scored the next chunk gives it up after ``stall_s`` and goes back to its live log,
    with nothing of its chunk stored."""
    job = jobs_of(container).start("default", 1)
    hung = make_engine(container.settings.database_url).connect()
    hung.execute(text("SELECT pg_advisory_lock(:c, :k)"),
                 {"c": CHUNK_LOCK_CLASS, "k": chunk_lock_key(job.job_id, 1)})
    hung.commit()
    worker = jobs_of(container)
    worker.stall_s = 0.5
    try:
        started = time.monotonic()
        after = worker.step()
        waited = time.monotonic() - started
    finally:
        hung.close()

    assert after is not None and after.done_position == 0 and after.status == "running"
    assert 0.5 <= waited < 0.5 + GIVE_UP_S  # the stall limit, not the free-chunk one
    assert stored(container) == []


def test_a_claim_whose_unlock_fails_takes_its_lock_away_with_its_connection(
        container: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its connection is closed for good, not pooled with the chunk's lock still held."""
    job = jobs_of(container).start("default", 1)
    claim = claim_chunk(container.engine, lambda: jobs_of(container).get(job.job_id), CHUNK)
    assert claim is not None and claim.start == 1
    assert held_elsewhere(container.engine, job.job_id, 1)

    def failing(*args: object) -> None:
        raise RuntimeError("the unlock's round trip fails")

    monkeypatch.setattr(chunk_claims, "_unlock", failing)
    claim.release()
    monkeypatch.undo()

    # Asked from another pool: one of this pool's connections would get a lock its own
    # session held again (they are re-entrant), and say it was free either way.
    other = make_engine(container.settings.database_url)
    assert not held_elsewhere(other, job.job_id, 1)  # gone with the connection
    other.dispose()
