"""Every deployment shape that scores traffic also ends idle sessions: `hcp evaluator` on the
database log, `hcp evaluator --processes 2` (each process a share of the log), and
`hcp evaluator` on Kafka beside `hcp relay`, and `hcp evaluator --once`, as an operator
runs them, on PostgreSQL. The
serving contract is the shipped default with a 2 s idle timeout; the chats are written as
the gateway writes them and nobody ends them: each is expired once, by whichever process
looks first, and scored under that contract."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from evaluators.rewards import RewardQuery
from events.ingest import Author, ClientEvent, IngestLimits, ingest
from events.kafka_io import ensure_topics
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.e2e.test_evaluator_processes import wait_for
from tests.unit.evaluators.factories import publish

pytestmark = [pytest.mark.postgres, pytest.mark.slow]
BIN = Path(sys.executable).parent
DEFAULT = (Path(__file__).resolve().parents[2] / "examples" / "contracts" / "default.toml").read_text()
SHORT = DEFAULT.replace('idle_timeout = "30m"', 'idle_timeout = "2s"')
SHAPES = {"database log": ("",), "two shares": ("", "--processes", "2"), "kafka": ("kafka",),
          "once": ("", "--once")}


@pytest.fixture(params=list(SHAPES))
def shape(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def container(postgres_url: str, shape: str, request: pytest.FixtureRequest) -> Iterator[Container]:
    kafka = request.getfixturevalue("kafka_bootstrap") if shape == "kafka" else ""
    settings = Settings(database_url=postgres_url, kafka_bootstrap=kafka,
                        topic_prefix=f"x{uuid.uuid4().hex[:8]}", serving_contract="default")
    built = Container(settings, make_engine(postgres_url))
    if kafka:
        ensure_topics(kafka, [settings.events_topic], partitions=2)
    assert SHORT != DEFAULT
    publish(built.contracts, SHORT)  # the first published version serves every slot
    yield built
    built.close()


def idle_chat(c: Container) -> str:
    stream = f"session-{uuid.uuid4()}"
    ingest(c.appender, [ClientEvent(stream, "session.started", {"harness": "hcp-gateway"}),
                        ClientEvent(stream, "turn.user", {"text": "What is a monad?"}),
                        ClientEvent(stream, "turn.assistant", {"text": "A pattern."}),
                        ClientEvent(stream, "turn.user", {"text": "And a functor?"}),
                        ClientEvent(stream, "turn.assistant", {"text": "A map."})],
           IngestLimits(100, 1 << 20), Author("chat-client", "acme"))
    return stream


def start(c: Container, log: Path, *command: str) -> subprocess.Popen[str]:
    s = c.settings
    env = {**os.environ, "HCP_DATABASE_URL": s.database_url, "HCP_KAFKA_BOOTSTRAP": s.kafka_bootstrap,
           "HCP_TOPIC_PREFIX": s.topic_prefix, "HCP_SERVING_CONTRACT": "default"}
    return subprocess.Popen([str(BIN / "hcp"), *command], env=env, stdout=log.open("a"),
                            stderr=subprocess.STDOUT, text=True)


def test_each_shape_ends_idle_sessions_once_and_scores_them(
        container: Container, shape: str, tmp_path: Path) -> None:
    streams = [idle_chat(container) for _ in range(3)]
    options = [o for o in SHAPES[shape] if o not in ("", "kafka")]
    log = tmp_path / "processes.log"
    if shape == "once":  # idle already when it starts: it expires them, scores them, exits
        time.sleep(2.5)
        assert start(container, log, "evaluator", *options).wait(120) == 0, log.read_text()
    processes = [] if shape == "once" else [start(container, log, "evaluator", *options)]
    if shape == "kafka":
        processes.append(start(container, log, "relay"))

    def scored() -> bool:
        return all(container.rewards.find(RewardQuery(stream_id=s, limit=10)) for s in streams)

    try:
        wait_for(scored, timeout=90, every=0.5)
    except AssertionError:
        raise AssertionError(log.read_text()[-3000:]) from None
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
            process.wait(30)
    for stream in streams:
        events = container.store.read_stream(stream, 0, 100, "acme")
        assert [e.type for e in events][-1] == "session.expired"
        assert sum(e.type == "session.expired" for e in events) == 1
        assert events[-1].payload["contract"] == "default@1"
        [reward] = container.rewards.find(RewardQuery(stream_id=stream, limit=10))
        assert reward.subject_id == f"episode:{stream}:6" and reward.score is not None
        assert not reward.errors and reward.contract_name == "default"
