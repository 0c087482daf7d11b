"""`hcp evaluator` on the database log (embedded mode: no Kafka), SIGKILLed at random points.

With the database log a batch's rewards and the reader's checkpoint commit in one
transaction, in a background thread while the next batch is read and scored
(evaluators/saving.py). A kill may land while a save is in flight, between two saves or
inside scoring: the restarted worker must read on from the last committed checkpoint
and end with every reward once, gapless, and its checkpoint at the head of the log.
History is pre-scored, so every reward checked comes from the live path.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from events.checkpoints import Checkpoints
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.e2e.test_evaluator_processes import (
    Worker,
    assert_exactly_once,
    publish_turn_and_episode_contracts,
    stored,
    wait_for,
)
from tests.unit.evaluators.factories import conversation

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture
def container(postgres_url: str) -> Iterator[Container]:
    settings = Settings(database_url=postgres_url, kafka_bootstrap="",
                        topic_prefix=f"d{uuid.uuid4().hex[:8]}")
    built = Container(settings, make_engine(postgres_url))
    publish_turn_and_episode_contracts(built)
    yield built
    built.close()


def test_a_database_log_evaluator_killed_and_restarted_loses_and_duplicates_nothing(
        container: Container, tmp_path: Path) -> None:
    for _ in range(300):
        conversation(container.store, turns=2)
    due = 300 * 3  # two turns under default@1, one episode under episodes@1
    log, group = tmp_path / "worker.log", "embedded"
    for share in (4, 2):  # killed twice, wherever it is: scoring, saving, between saves
        worker = Worker(container, group, log, "--batch-size", "25")
        wait_for(lambda share=share: len(stored(container)) >= due // share, every=0.01)
        worker.kill()
        assert len(stored(container)) < due, "the evaluator finished before it could be killed"

    restarted = Worker(container, group, log, "--batch-size", "25")
    head = container.store.head()
    wait_for(lambda: Checkpoints(container.engine).load(f"reader:{group}") >= head)
    output = restarted.stop()

    assert_exactly_once(container, due)
    assert "stored" in output and "new rewards" in output, output
