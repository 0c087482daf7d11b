"""Two relays on one outbox while PostgreSQL restarts under them.

The active relay's advisory lock dies with its session when PostgreSQL restarts; before
the fix the old holder went on publishing while a standby took the lock, so both
published (17.8% duplicate messages). Now the holder checks its lock before every page
and stands by when it is gone, and the standby rides out the connection errors. What
stays is the at-least-once of a single relay: at most the page in flight at each restart
(published, its checkpoint not written) goes out twice.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from events.model import NewEvent
from events.sql_store import SqlEventStore
from kernel.db import make_engine
from tests.faults.conftest import PrivatePostgres, wait_for
from tests.faults.test_postgres_restart import append_retrying
from tests.integration.conftest import first_occurrences, read_topic

pytestmark = [pytest.mark.postgres, pytest.mark.kafka, pytest.mark.slow]
BIN = Path(sys.executable).parent
PAGE = 50
RESTARTS = 2


def start_relay(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([str(BIN / "hcp"), "relay", "--page-size", str(PAGE)], env=env,
                            stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)


def test_two_relays_publish_once_across_postgres_restarts(
        private_postgres: PrivatePostgres, private_database: str, kafka_bootstrap: str,
        tmp_path: Path) -> None:
    prefix = f"f{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "HCP_DATABASE_URL": private_database, "HCP_KAFKA_BOOTSTRAP": kafka_bootstrap,
           "HCP_TOPIC_PREFIX": prefix, "HCP_REDIS_URL": "", "HCP_DATA_DIR": str(tmp_path)}
    engine = make_engine(private_database)
    store = SqlEventStore(engine)
    relays = [start_relay(env, tmp_path / f"relay{i}.log") for i in range(2)]
    streams = [f"s-{i}" for i in range(10)]
    try:
        # Both up before the first restart: one publishing, the other standing by.
        logs = [tmp_path / f"relay{i}.log" for i in range(2)]
        wait_for(lambda: sorted("standby" in log.read_text() for log in logs) == [False, True]
                 and any("relaying" in log.read_text() for log in logs), 60, "both relays to start")
        for i in range(120):
            if i in (40, 80):
                private_postgres.restart(down_s=1.5)
            batch = [NewEvent(streams[(i + j) % 10], "turn.user", {"text": f"{i}.{j}"})
                     for j in range(20)]
            append_retrying(store, batch)
            time.sleep(0.03)
        head = store.head()
        topic = f"{prefix}.events"

        def everything_published() -> list[dict]:
            try:
                records = read_topic(kafka_bootstrap, topic, timeout=5)
            except ValueError:  # the topic has no partitions yet: no relay got that far
                return []
            values = [json.loads(r.value) for r in records]
            return values if len({v["event_id"] for v in values}) >= head else []

        published = wait_for(everything_published, 120, "every event on the topic", every=1.0)
        assert all(relay.poll() is None for relay in relays), "a relay exited (standby crash?)"
    finally:
        for relay in relays:
            if relay.poll() is None:
                os.killpg(relay.pid, signal.SIGTERM)
                relay.wait(30)
        for log in sorted(tmp_path.glob("relay*.log")):
            print(f"--- {log.name}\n{log.read_text()[-3000:]}")

    log = [e.to_json() for e in store.iter_all(raw=True)]
    assert first_occurrences(published) == first_occurrences(log)  # nothing lost, order kept
    duplicates = len(published) - len(log)
    print(f"{len(log)} events, {duplicates} duplicates ({duplicates / len(log):.1%}) "
          f"over {RESTARTS} restarts with two relays")
    assert duplicates <= PAGE * RESTARTS
    engine.dispose()
