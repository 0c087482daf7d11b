"""Every id the CLI prints is one every command that takes an id accepts (docs/cli.md):
the runs `hcp triggers firings` lists (once cut to 8 characters, which `hcp train status`
refused), the sessions `hcp sessions list` and the events `hcp events list` print (what
an auditor needs for `hcp lineage downstream`), the rewards a lineage tree names."""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli.main import app
from events.model import NewEvent
from hcp.bootstrap import Container
from hcp.settings import Settings, get_settings
from kernel.db import make_engine
from tests.serving_world import build_world, train_adapter
from tests.unit.evaluators.factories import conversation
from tests.unit.trainer_core.fixtures import RecordingDispatcher

pytest.importorskip("peft")
pytestmark = [pytest.mark.train]
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@pytest.fixture
def hcp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A world with two sessions, their rewards and a training run, and ``hcp ARGS``."""
    for name in [n for n in os.environ if n.startswith("HCP_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HCP_DATA_DIR", str(tmp_path))
    get_settings.cache_clear()
    runner = CliRunner()

    def run(*args: str) -> Any:
        return runner.invoke(app, list(args))

    assert run("db", "upgrade").exit_code == 0
    url = f"sqlite:///{tmp_path / 'hcp.sqlite3'}"
    settings = Settings(database_url=url, data_dir=tmp_path, models_dir=tmp_path / "models",
                        kafka_bootstrap="", redis_url="")
    c = Container(settings=settings, engine=make_engine(url), dispatch_to=RecordingDispatcher())
    build_world(c, tmp_path / "models")
    for _ in range(2):
        stream = f"session-{uuid.uuid4()}"
        c.store.append([NewEvent(stream, "session.started", {"harness": "cli-test"})])
        conversation(c.store, stream_id=stream)
    c.evaluator("cli-test").drain(timeout=60)
    train_adapter(c, "chat", 3, "for the ids")
    c.close()
    yield run
    get_settings.cache_clear()


def ok(result: Any) -> str:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return str(result.stdout)


def test_the_runs_firings_print_are_the_runs_train_status_takes(hcp: Any) -> None:
    runs = UUID.findall(ok(hcp("triggers", "firings", "--specialist", "chat")))
    assert runs
    for run in runs:
        assert run in ok(hcp("train", "status", run))


def test_sessions_and_events_listed_are_what_downstream_takes(hcp: Any) -> None:
    sessions = ok(hcp("sessions", "list", "--quiet")).split()
    assert len(sessions) == 2 and all(s.startswith("session-") for s in sessions)
    table = ok(hcp("sessions", "list"))
    assert all(s in table for s in sessions) and "cli-test" in table
    for session in sessions:
        events = ok(hcp("events", "list", "--stream", session, "--quiet")).split()
        assert len(events) == 10  # session.started, 2 x (user, route, answer, feedback), end
        answer = ok(hcp("events", "list", "--stream", session, "--type", "turn.assistant",
                        "--limit", "1", "--quiet")).strip()
        assert json.loads(ok(hcp("events", "show", answer, "--json")))["type"] == "turn.assistant"
        reached = ok(hcp("lineage", "downstream", "--event", answer))
        assert "reward record(s)" in reached
        rewards = re.findall(rf"── \d+ ({UUID.pattern}) ", reached)  # position, reward id, subject …
        assert rewards
        for reward in rewards:
            assert reward in ok(hcp("rewards", "show", reward))
        ok(hcp("lineage", "downstream", "--stream", session))
        for reward in UUID.findall(ok(hcp("rewards", "list", "--stream", session))):
            if not session.endswith(reward):
                assert reward in ok(hcp("rewards", "show", reward, "--json"))


def test_an_unknown_stream_or_a_malformed_event_id_is_refused_plainly(hcp: Any) -> None:
    missing = hcp("events", "list", "--stream", "session-nope")
    assert missing.exit_code == 3 and "no stream 'session-nope'" in missing.stderr
    malformed = hcp("events", "show", "12345")
    assert malformed.exit_code == 2 and "not an event id" in malformed.stderr
