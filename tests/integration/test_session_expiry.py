"""Sessions of outside traffic end by themselves under the shipped default contract, on
SQLite and PostgreSQL: an idle two-turn chat with no feedback call is expired once,
however many evaluators look, and then scored; a turn that comes later opens the next
episode instead of changing a judged one; a look for idle sessions that fails stops no
evaluator."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from evaluators.rewards import RewardQuery
from evaluators.session_expiry import Sweep
from events.ingest import Author, ClientEvent, IngestLimits, ingest
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.clock import utcnow
from kernel.db import make_engine
from tests.unit.evaluators.factories import publish

DEFAULT = (Path(__file__).resolve().parents[2] / "examples" / "contracts" / "default.toml").read_text()
AUTHOR = Author("chat-client", "acme")


@pytest.fixture
def container(database_url: str) -> Iterator[Container]:
    built = Container(Settings(database_url=database_url, kafka_bootstrap="",
                               serving_contract="default"), make_engine(database_url))
    publish(built.contracts, DEFAULT)  # the first published version serves every slot
    yield built
    built.close()


def chat(c: Container, stream: str, texts: list[tuple[str, str]]) -> None:
    events = []
    for question, answer in texts:
        events += [ClientEvent(stream, "turn.user", {"text": question}),
                   ClientEvent(stream, "turn.assistant", {"text": answer})]
    ingest(c.appender, [ClientEvent(stream, "session.started", {"harness": "hcp-gateway"}), *events],
           IngestLimits(1000, 1 << 20), AUTHOR)


def expired(c: Container, stream: str) -> list:
    return [e for e in c.store.read_stream(stream) if e.type == "session.expired"]


def test_an_idle_chat_is_expired_once_and_scored_under_the_default_contract(container: Container) -> None:
    stream = f"session-{uuid.uuid4()}"
    chat(container, stream, [("What is a monad?", "A pattern."), ("And a functor?", "A map.")])
    assert container.session_expiry().sweep().expired == 0  # not idle yet
    later = lambda: utcnow() + timedelta(minutes=31)  # noqa: E731
    # Three evaluators' sweepers at once: one session.expired.
    sweepers = [container.session_expiry(clock=later) for _ in range(3)]
    threads = [threading.Thread(target=s.sweep) for s in sweepers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    [event] = expired(container, stream)
    assert event.payload["idle_timeout_s"] == 1800 and event.payload["contract"] == "default@1"
    assert event.metadata.tenant == "acme" and event.payload["last_seq"] == 5
    container.evaluator().drain(timeout=60)
    [reward] = container.rewards.find(RewardQuery(stream_id=stream, limit=10))
    assert reward.subject_id == f"episode:{stream}:6" and reward.score is not None
    assert reward.tenant == "acme" and not reward.errors


def test_a_late_turn_on_an_expired_session_is_the_next_episode(container: Container) -> None:
    stream = f"session-{uuid.uuid4()}"
    chat(container, stream, [("hello", "hi")])
    container.session_expiry(clock=lambda: utcnow() + timedelta(hours=1)).sweep()
    chat(container, stream, [("are you there?", "yes")])  # the gateway writes session.started again
    container.evaluator().drain(timeout=60)
    rewards = container.rewards.find(RewardQuery(stream_id=stream, limit=10))
    assert [r.subject_id for r in rewards] == [f"episode:{stream}:4"]  # the first: judged as it was
    assert [e.type for e in container.store.read_stream(stream)][-3:] == [
        "session.started", "turn.user", "turn.assistant"]
    assert len(expired(container, stream)) == 1


def test_a_failing_look_for_idle_sessions_stops_no_evaluator(container: Container) -> None:
    stream = f"session-{uuid.uuid4()}"
    chat(container, stream, [("hello", "hi")])
    ingest(container.appender, [ClientEvent(stream, "episode.completed", {"outcome": "success"})],
           IngestLimits(1000, 1 << 20), AUTHOR)
    evaluator = container.evaluator()
    assert evaluator.expiry is not None
    looks: list[int] = []

    def broken() -> Sweep:
        looks.append(1)
        raise RuntimeError("the log is unreachable")

    evaluator.expiry.sweep = broken  # type: ignore[method-assign]
    evaluator.drain(timeout=60)  # logged, tried again at the next look; scoring goes on
    assert looks
    [reward] = container.rewards.find(RewardQuery(stream_id=stream, limit=10))
    assert reward.subject_id == f"episode:{stream}:4" and not reward.errors
