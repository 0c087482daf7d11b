"""A re-evaluation ``run`` saves each chunk while it scores the next (evaluators/saving.py):
chunks commit in order with their progress, a failed save stops the run before any later
chunk is saved, a failure while a save is in flight keeps that save, and two runs of one
job store every reward once. On SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from evaluators import reevaluation as jobs_module
from evaluators.reevaluation import Job, Reevaluations
from evaluators.rewards import RewardQuery, RewardStore
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.unit.evaluators.factories import contract_text, conversation, publish

CONVERSATIONS, CHUNK = 6, 9  # two-turn conversations of 9 events: 2 rewards each


@pytest.fixture
def container(database_url: str) -> Iterator[Container]:
    built = seeded(database_url)
    yield built
    built.close()


def seeded(database_url: str) -> Container:
    """``CONVERSATIONS`` conversations, then the default contract published."""
    built = Container(Settings(database_url=database_url, kafka_bootstrap=""), make_engine(database_url))
    for _ in range(CONVERSATIONS):
        conversation(built.store, turns=2)
    publish(built.contracts, contract_text())
    return built


def jobs_of(container: Container) -> Reevaluations:
    return Reevaluations(container.engine, container.store, container.contracts,
                         RewardStore(container.engine), chunk_positions=CHUNK)


def stored(container: Container) -> list[tuple[int, str]]:
    found = RewardStore(container.engine).find(RewardQuery("default", 1, limit=10_000))
    return [(r.position or 0, r.subject_id) for r in found]


def test_a_run_commits_every_chunk_in_order_with_its_progress(container: Container) -> None:
    jobs, seen = jobs_of(container), []
    job = jobs.start("default", 1)
    done = jobs.run(job.job_id, on_progress=lambda j: seen.append((j.done_position, j.subjects_scored)))

    assert done.status == "succeeded" and done.done_position == done.to_position
    assert [p for p, _ in seen] == sorted({min(p, done.to_position)
                                           for p in range(CHUNK, done.to_position + CHUNK, CHUNK)})
    assert seen[-1] == (done.to_position, 2 * CONVERSATIONS) == (done.done_position, done.subjects_scored)
    again = jobs.get(job.job_id)
    assert again is not None and again.to_json() == done.to_json()  # returned as stored
    reported: list[Job] = []
    assert jobs.run(job.job_id, on_progress=reported.append).to_json() == done.to_json()
    assert [j.to_json() for j in reported] == [done.to_json()]  # a finished job: said once
    assert [p for p, _ in stored(container)] == list(range(1, 2 * CONVERSATIONS + 1))


def test_a_failed_save_stops_the_run_before_any_later_chunk_is_saved(container: Container) -> None:
    jobs = jobs_of(container)
    real_record, calls = jobs.rewards.record, []

    def second_fails(records: list, conn: object = None, awaiting: tuple = ()) -> list:
        calls.append(len(records))
        if len(calls) == 2:
            raise RuntimeError("the second chunk's transaction fails")
        return real_record(records, conn, awaiting)  # type: ignore[arg-type]

    jobs.rewards.record = second_fails  # type: ignore[method-assign]
    job = jobs.start("default", 1)
    with pytest.raises(RuntimeError, match="second chunk"):
        jobs.run(job.job_id)
    after = jobs.get(job.job_id)
    assert after is not None and after.done_position == CHUNK and after.status == "running"
    assert len(stored(container)) == 2  # the first conversation's two turns only

    done = jobs_of(container).run(job.job_id)  # a restart goes on from there
    assert (done.status, done.subjects_scored) == ("succeeded", 2 * CONVERSATIONS)
    assert [p for p, _ in stored(container)] == list(range(1, 2 * CONVERSATIONS + 1))


def test_a_failure_while_a_save_is_in_flight_keeps_that_save(container: Container,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    real_score, calls = jobs_module.score_subjects, []

    def third_fails(*args: object) -> object:
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("scoring the third chunk fails")
        return real_score(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(jobs_module, "score_subjects", third_fails)
    jobs = jobs_of(container)
    job = jobs.start("default", 1)
    with pytest.raises(RuntimeError, match="third chunk"):
        jobs.run(job.job_id)
    after = jobs.get(job.job_id)
    assert after is not None and after.done_position == 2 * CHUNK  # the second's save was kept
    assert len(stored(container)) == 4

    monkeypatch.setattr(jobs_module, "score_subjects", real_score)
    assert jobs.run(job.job_id).subjects_scored == 2 * CONVERSATIONS
    assert [p for p, _ in stored(container)] == list(range(1, 2 * CONVERSATIONS + 1))


def test_two_runs_of_one_job_store_every_reward_once(container: Container) -> None:
    job = jobs_of(container).start("default", 1)
    results: list[Job] = []
    runs = [threading.Thread(target=lambda: results.append(jobs_of(container).run(job.job_id, idle=0.01)))
            for _ in range(2)]
    for run in runs:
        run.start()
    for run in runs:
        run.join(60)
    assert [r.status for r in results] == ["succeeded", "succeeded"]
    assert results[0].subjects_scored == results[1].subjects_scored == 2 * CONVERSATIONS
    rewards = stored(container)
    assert [p for p, _ in rewards] == list(range(1, 2 * CONVERSATIONS + 1))
    assert len({s for _, s in rewards}) == 2 * CONVERSATIONS
