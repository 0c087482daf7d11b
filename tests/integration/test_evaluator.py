"""The evaluator over the database log (embedded mode), on SQLite and PostgreSQL: one reward
per (subject, contract version), whatever is redelivered, restarted or run twice."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import DBAPIError

from evaluators.evaluator import Evaluator
from evaluators.rewards import RewardQuery, RewardStore
from evaluators.tables import reward_records
from events.checkpoints import Checkpoints
from events.feed import DatabaseLogReader, LogReader
from events.model import RecordedEvent
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.unit.evaluators.factories import MISSING_FIELD, contract_text, conversation, publish


@pytest.fixture
def container(database_url: str) -> Iterator[Container]:
    built = Container(Settings(database_url=database_url, kafka_bootstrap=""), make_engine(database_url))
    yield built
    built.close()


def rewards(container: Container) -> list:
    return RewardStore(container.engine).find(RewardQuery(limit=10_000))


def drain(container: Container, group: str = "evaluator") -> Evaluator:
    worker = container.evaluator(group)
    worker.drain(timeout=60)
    return worker


def test_each_finished_subject_gets_one_reward_per_active_version(container: Container) -> None:
    publish(container.contracts, contract_text())
    publish(container.contracts, contract_text(name="episodes", subject="episode"), name="episodes")
    done = conversation(container.store, turns=2)
    open_ = conversation(container.store, turns=2, complete=False)  # its last turn is not closed

    drain(container)

    found = {(r.subject_id, r.contract_name) for r in rewards(container)}
    assert found == {(f"turn:{done}:1", "default"), (f"turn:{done}:5", "default"),
                     (f"turn:{open_}:1", "default"), (f"episode:{done}:9", "episodes")}
    assert [r.position for r in rewards(container)] == [1, 2, 3, 4]  # gapless
    episode = next(r for r in rewards(container) if r.contract_name == "episodes")
    assert (episode.first_position, len(episode.event_ids)) == (
        container.store.read_stream(done)[0].position, 9)


def test_subjects_spanning_many_polls_are_assembled_whole(container: Container) -> None:
    publish(container.contracts, contract_text())
    publish(container.contracts, contract_text(name="episodes", subject="episode"), name="episodes")
    a, b = "stream-a", "stream-b"
    for _ in range(2):  # interleaved, so every poll of 3 events cuts through both streams
        conversation(container.store, turns=1, complete=False, stream_id=a)
        conversation(container.store, turns=1, complete=False, stream_id=b)
    conversation(container.store, turns=1, stream_id=a)

    container.evaluator(batch_size=3).drain(timeout=60)

    found = {r.subject_id: r for r in rewards(container)}
    stream_a = container.store.read_stream(a)
    assert set(found) == {f"turn:{a}:1", f"turn:{a}:5", f"turn:{a}:9", f"turn:{b}:1",
                          f"episode:{a}:13"}
    assert list(found[f"episode:{a}:13"].event_ids) == [str(e.event_id) for e in stream_a]
    assert list(found[f"turn:{a}:5"].event_ids) == [str(e.event_id) for e in stream_a[4:8]]


def test_redelivery_a_restart_and_a_second_worker_add_nothing(container: Container) -> None:
    publish(container.contracts, contract_text())
    for _ in range(5):
        conversation(container.store, turns=3)
    drain(container)
    first = rewards(container)
    assert len(first) == 15

    Checkpoints(container.engine).save("reader:evaluator", 0)  # as if no offset was committed
    drain(container)
    drain(container, group="another-worker")

    assert rewards(container) == first


class OffsetReader(LogReader[RecordedEvent]):
    """A reader whose position lives outside the database (as Kafka offsets do): the
    evaluator commits it after the rewards' transaction. Reads the log like ``inner``."""

    def __init__(self, inner: DatabaseLogReader) -> None:
        self.inner = inner

    def poll(self, max_records: int = 500, timeout: float = 1.0) -> list[RecordedEvent]:
        return self.inner.poll(max_records, timeout)

    def commit(self) -> None:
        raise RuntimeError("killed between the reward commit and the offset commit")

    def rewind(self) -> None:
        self.inner.rewind()

    def close(self) -> None:
        pass


def test_rewards_are_durable_before_an_offset_is_committed(container: Container) -> None:
    publish(container.contracts, contract_text())
    conversation(container.store, turns=2)
    worker = container.evaluator(reader=OffsetReader(DatabaseLogReader(
        container.engine, container.store, "evaluator")))

    with pytest.raises(RuntimeError):
        while True:
            worker.poll_once(0.1)
    assert len(rewards(container)) == 2
    assert Checkpoints(container.engine).load("reader:evaluator") == 0

    drain(container)  # the restarted worker sees the whole batch again
    assert len(rewards(container)) == 2


def test_the_database_position_commits_with_the_rewards_or_not_at_all(container: Container) -> None:
    publish(container.contracts, contract_text())
    conversation(container.store, turns=2)
    worker = container.evaluator()

    def crash(*args: object) -> None:
        raise RuntimeError("killed inside the rewards' transaction")

    worker.reader.checkpoints.save = crash  # type: ignore[attr-defined,method-assign]
    with pytest.raises(RuntimeError):
        while True:
            worker.poll_once(0.1)
    assert rewards(container) == []
    assert Checkpoints(container.engine).load("reader:evaluator") == 0

    drain(container)
    assert len(rewards(container)) == 2
    assert Checkpoints(container.engine).load("reader:evaluator") == container.store.head()


def test_a_subject_an_expression_cannot_evaluate_gets_a_recorded_error(container: Container) -> None:
    publish(container.contracts, contract_text(feedback=MISSING_FIELD))
    stream = conversation(container.store, turns=1)

    drain(container)

    [reward] = rewards(container)
    assert reward.subject_id == f"turn:{stream}:1"
    assert reward.score is None and not reward.eligible
    assert reward.errors[0]["item"] == "criterion:feedback"
    with container.engine.connect() as conn:
        stored = conn.execute(select(reward_records.c.error)).scalar_one()
    assert "rating_hint" in stored


def test_a_version_published_later_scores_new_subjects_and_history(container: Container) -> None:
    publish(container.contracts, contract_text())
    before = conversation(container.store, turns=1)
    drain(container)
    publish(container.contracts, contract_text(answered_weight=3.0), parent=1)
    after = conversation(container.store, turns=1)

    drain(container)

    by_version = {(r.subject_id, r.contract_version) for r in rewards(container)}
    assert by_version == {(f"turn:{before}:1", 1), (f"turn:{after}:1", 1),
                          (f"turn:{before}:1", 2), (f"turn:{after}:1", 2)}


def test_reward_records_refuse_update_and_delete(container: Container) -> None:
    publish(container.contracts, contract_text())
    conversation(container.store, turns=1)
    drain(container)
    for statement in ("UPDATE reward_records SET score = 0", "DELETE FROM reward_records"):
        with pytest.raises(DBAPIError), container.engine.begin() as conn:
            conn.execute(text(statement))
    with container.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(reward_records)).scalar() == 1


def test_a_long_running_worker_sees_versions_published_and_retired_between_its_polls(
        container: Container) -> None:
    worker = container.evaluator()
    publish(container.contracts, contract_text())
    first = conversation(container.store, turns=1)
    worker.drain(timeout=60)
    publish(container.contracts, contract_text(answered_weight=3.0), parent=1)
    container.serving.move("default", None, 2, "test", "v2 takes over")
    container.contracts.retire("default", 1, "test")
    second = conversation(container.store, turns=1)
    worker.drain(timeout=60)  # the same worker: its active versions are not read afresh

    made = {(r.stream_id, r.contract_version) for r in rewards(container)}
    assert made == {(first, 1), (first, 2), (second, 2)}  # history by the job, no v1 after retiring
