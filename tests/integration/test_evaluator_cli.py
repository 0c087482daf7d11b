"""The evaluator's commands as a user types them, in embedded mode (a SQLite file)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from hcp.bootstrap import Container
from hcp.settings import Settings, get_settings
from kernel.db import make_engine
from tests.integration.cli import hcp
from tests.unit.evaluators.factories import contract_text, conversation, publish


@pytest.fixture
def container(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Container]:
    monkeypatch.setenv("HCP_DATABASE_URL", sqlite_url)
    monkeypatch.setenv("HCP_KAFKA_BOOTSTRAP", "")
    get_settings.cache_clear()
    built = Container(Settings(database_url=sqlite_url, kafka_bootstrap=""), make_engine(sqlite_url))
    yield built
    built.close()
    get_settings.cache_clear()



def test_evaluate_once_list_rewards_dry_run_and_reevaluate(container: Container, tmp_path: Path) -> None:
    publish(container.contracts, contract_text())
    for thumbs in ("up", "down", "up"):
        conversation(container.store, turns=2, thumbs=thumbs)

    assert "6 new rewards" in hcp("evaluator", "--once")
    listed = [json.loads(line) for line in hcp("rewards", "list", "--contract", "default@latest",
                                               "--json").splitlines()]
    assert len(listed) == 6 and {r["contract"]["version"] for r in listed} == {1}
    assert "default@1" in hcp("rewards", "list", "--limit", "2").splitlines()[0]

    draft = container.contracts.create_draft("default", contract_text(answered_weight=0.25), "t", 1)
    report = hcp("contract", "dry-run", "default", str(draft.version), "--last", "4")
    assert f"dry run of default@{draft.version} (draft) over 4 subjects" in report
    assert "baseline default@1" in report and "mean delta" in report and "largest movers" in report
    ranged = json.loads(hcp("contract", "dry-run", "default", str(draft.version), "--from", "1",
                            "--to", "14", "--json"))  # publishing wrote 4 events, 2 serving moves
    assert ranged["subjects"] == 2 and ranged["selection"]["to_position"] == 14

    container.contracts.publish("default", draft.version, "t")
    done = hcp("contract", "reevaluate", "default", str(draft.version))
    assert "succeeded: 6 scored, 0 errored, 0 skipped" in done
    assert len(hcp("rewards", "list", "--contract", f"default@{draft.version}").splitlines()) == 6


def test_evaluator_processes_on_sqlite_work_and_say_they_gain_nothing(container: Container) -> None:
    publish(container.contracts, contract_text())
    jobs = container.reevaluations
    jobs.run(jobs.start("default", 1).job_id)  # what is scored below, the processes score
    for _ in range(4):
        conversation(container.store, turns=2)

    said = hcp("evaluator", "--once", "--processes", "2")

    assert "on SQLite each process reads the whole log" in said
    listed = hcp("rewards", "list", "--contract", "default@1", "--limit", "100").splitlines()
    assert len(listed) == 8


def test_commands_explain_bad_input(container: Container) -> None:
    publish(container.contracts, contract_text())
    runner = CliRunner()

    draft_only = container.contracts.create_draft("default", contract_text(answered_weight=2.0), "t", 1)
    refused = runner.invoke(app, ["contract", "reevaluate", "default", str(draft_only.version)])
    unknown = runner.invoke(app, ["rewards", "list", "--contract", "nope@latest"])
    both = runner.invoke(app, ["contract", "dry-run", "default", "2", "--last", "3", "--from", "1"])

    assert refused.exit_code == 4 and "only a published version" in refused.output
    assert unknown.exit_code == 3 and "no published version" in unknown.output
    assert both.exit_code == 2 and "either the last N" in both.output


def test_hcp_relay_publishes_reward_records_to_the_rewards_topic(container: Container) -> None:
    publish(container.contracts, contract_text())
    conversation(container.store, turns=1)
    hcp("evaluator", "--once")

    feeds = {feed.topic: feed for feed in container.outbox_feeds()}

    assert set(feeds) == {"hcp.events", "hcp.rewards", "hcp.checkpoints"}
    [message] = feeds["hcp.rewards"].read_after(0, 10)
    assert message.position == 1 and json.loads(message.value)["subject"]["id"].startswith("turn:")
