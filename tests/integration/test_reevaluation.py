"""Publishing a version re-scores history under it, with progress that survives a restart;
rewards under older versions stay."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from contract.versions import VersionConflict
from evaluators.reevaluation import Reevaluations
from evaluators.rewards import RewardQuery, RewardStore
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.unit.evaluators.factories import contract_text, conversation, publish


@pytest.fixture
def container(database_url: str) -> Iterator[Container]:
    built = Container(Settings(database_url=database_url, kafka_bootstrap=""), make_engine(database_url))
    yield built
    built.close()


def jobs_of(container: Container, chunk: int = 2000) -> Reevaluations:
    return Reevaluations(container.engine, container.store, container.contracts,
                         RewardStore(container.engine), chunk_positions=chunk)


def under(container: Container, version: int) -> dict[str, float | None]:
    found = RewardStore(container.engine).find(RewardQuery("default", version, limit=10_000))
    return {r.subject_id: r.score for r in found}


def test_publishing_a_version_rescores_history_and_keeps_the_old_rewards(container: Container) -> None:
    publish(container.contracts, contract_text())
    streams = [conversation(container.store, turns=2, thumbs="down") for _ in range(4)]
    container.evaluator().drain(timeout=60)
    before = under(container, 1)
    assert len(before) == 8 and set(before.values()) == {0.5}

    publish(container.contracts, contract_text(answered_weight=3.0), parent=1)
    container.evaluator().drain(timeout=60)

    assert under(container, 1) == before  # older versions' rewards stay as they were
    rescored = under(container, 2)
    assert set(rescored) == {f"turn:{s}:{seq}" for s in streams for seq in (1, 5)}
    assert set(rescored.values()) == {0.75}
    [job] = jobs_of(container).jobs("default", 2)
    assert (job.status, job.progress, job.subjects_scored) == ("succeeded", 1.0, 8)
    published_at = container.contracts.history("default")[-1]
    assert published_at.type == "contract.published"
    assert job.to_position >= published_at.position


def test_progress_is_visible_and_a_restart_resumes_from_done_position(container: Container) -> None:
    for _ in range(6):
        conversation(container.store, turns=2)  # 9 events each
    publish(container.contracts, contract_text())
    first = jobs_of(container, chunk=20)
    job = first.start("default", 1)
    assert (job.done_position, job.progress) == (0, 0.0)

    partial = first.step(job.job_id)
    assert partial is not None and partial.done_position == 20
    assert 0 < first.get(job.job_id).progress < 1  # type: ignore[union-attr]
    scored_so_far = len(under(container, 1))

    restarted = jobs_of(container, chunk=20)  # a new process: nothing in memory
    seen: list[int] = []
    done = restarted.run(job.job_id, on_progress=lambda j: seen.append(j.done_position))

    assert seen[0] == 40 and seen == sorted(seen)  # resumed after 20, never went back
    assert done.status == "succeeded" and done.done_position == done.to_position
    assert len(under(container, 1)) == 12 > scored_so_far
    assert done.subjects_scored == 12


def test_a_job_from_a_chosen_position_scores_only_what_closed_from_there(container: Container) -> None:
    old = conversation(container.store, turns=1)
    cut = container.store.head() + 1
    new = conversation(container.store, turns=1)
    publish(container.contracts, contract_text())
    jobs = jobs_of(container)

    job = jobs.run(jobs.start("default", 1, from_position=cut).job_id)

    assert set(under(container, 1)) == {f"turn:{new}:1"}
    assert f"turn:{old}:1" not in under(container, 1)
    assert job.from_position == cut


def test_starting_again_returns_the_same_job_and_a_draft_cannot_start(container: Container) -> None:
    conversation(container.store, turns=1)
    publish(container.contracts, contract_text())
    jobs = jobs_of(container)

    assert jobs.start("default", 1).job_id == jobs.start("default", 1).job_id
    assert jobs.start("default", 1, 5).job_id != jobs.start("default", 1).job_id
    draft = container.contracts.create_draft("default", contract_text(answered_weight=2.0), "t", 1)
    with pytest.raises(VersionConflict):
        jobs.start("default", draft.version)
