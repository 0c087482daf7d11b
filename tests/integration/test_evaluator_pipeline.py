"""The database-log evaluator saves a batch while it scores the next (evaluators/saving.py):
each save commits its own batch's position, a failed save stops the worker before any
later batch is saved, and the worker goes on from the last committed position. On SQLite
and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from evaluators import evaluator as worker_module
from evaluators.rewards import RewardQuery, RewardStore
from events.checkpoints import Checkpoints
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.unit.evaluators.factories import contract_text, conversation, publish

CONVERSATION = 9  # events of a complete two-turn conversation with feedback: 2 rewards


@pytest.fixture
def container(database_url: str) -> Iterator[Container]:
    built = Container(Settings(database_url=database_url, kafka_bootstrap=""), make_engine(database_url))
    publish(built.contracts, contract_text())
    # Past the contract's own events (nothing to score there), so that each batch of
    # CONVERSATION events is one conversation.
    Checkpoints(built.engine).save("reader:evaluator", built.store.head())
    for _ in range(4):
        conversation(built.store, turns=2)
    yield built
    built.close()


def positions(container: Container) -> list[int]:
    return [r.position for r in RewardStore(container.engine).find(RewardQuery(limit=10_000))]


def checkpoint(container: Container) -> int:
    """How far past the first conversation's start the worker's checkpoint is."""
    return Checkpoints(container.engine).load("reader:evaluator") - first(container) + 1


def first(container: Container) -> int:
    return container.store.head() - 4 * CONVERSATION + 1


def test_a_failed_save_stops_the_worker_before_any_later_batch_is_saved(container: Container) -> None:
    worker = container.evaluator(batch_size=CONVERSATION)
    checkpoints = worker.reader.checkpoints  # type: ignore[attr-defined]
    real_save, saves = checkpoints.save, []

    def second_fails(name: str, position: int, conn: object = None) -> None:
        saves.append(position)
        if len(saves) == 2:
            raise RuntimeError("the second batch's transaction fails")
        real_save(name, position, conn)

    checkpoints.save = second_fails
    with pytest.raises(RuntimeError, match="second batch"):
        while True:
            worker.poll_once(0.1)
    # The first batch with its own position (the reader had polled the third by then).
    assert [p - first(container) + 1 for p in saves] == [CONVERSATION, 2 * CONVERSATION]
    assert positions(container) == [1, 2]
    assert checkpoint(container) == CONVERSATION
    assert worker.reader.position == first(container) + CONVERSATION - 1  # type: ignore[attr-defined]

    totals = worker.drain(timeout=60)  # the same worker reads on from there
    assert (totals.events, totals.rewards) == (3 * CONVERSATION, 6)
    assert positions(container) == list(range(1, 9))
    assert checkpoint(container) == 4 * CONVERSATION


def test_a_failure_while_a_save_is_in_flight_keeps_that_save(container: Container,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    real_score, calls = worker_module.score_subjects, []

    def second_fails(*args: object) -> object:
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("scoring the second batch fails")
        return real_score(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(worker_module, "score_subjects", second_fails)
    worker = container.evaluator(batch_size=CONVERSATION)
    worker.poll_once(0.1)  # the first batch: scored, its save started
    with pytest.raises(RuntimeError, match="second batch"):
        worker.poll_once(0.1)
    assert positions(container) == [1, 2]
    assert checkpoint(container) == CONVERSATION
    assert worker.reader.position == first(container) + CONVERSATION - 1  # type: ignore[attr-defined]

    assert worker.drain(timeout=60).rewards == 6
    assert positions(container) == list(range(1, 9))
    assert checkpoint(container) == 4 * CONVERSATION


def test_each_step_reports_the_rewards_its_finished_save_stored(container: Container) -> None:
    worker = container.evaluator(batch_size=CONVERSATION)
    steps = [worker.poll_once(0.1) for _ in range(5)]  # four batches, then an empty poll
    assert [s.events for s in steps] == [CONVERSATION] * 4 + [0]
    assert [s.rewards for s in steps] == [0, 2, 2, 2, 2]
    assert positions(container) == list(range(1, 9))
    assert checkpoint(container) == 4 * CONVERSATION
