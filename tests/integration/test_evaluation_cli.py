"""What the evaluation team types: dry runs and publishing that fail loudly, re-evaluation
verdicts, comparisons of stored rewards, and an evaluator that says only what it did."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hcp.bootstrap import Container
from hcp.settings import Settings, get_settings
from kernel.db import make_engine
from tests.integration.cli import hcp
from tests.integration.test_publish_checks import BROKEN
from tests.unit.evaluators.factories import contract_text, conversation, publish


@pytest.fixture
def container(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Container]:
    monkeypatch.setenv("HCP_DATABASE_URL", sqlite_url)
    monkeypatch.setenv("HCP_KAFKA_BOOTSTRAP", "")
    get_settings.cache_clear()
    built = Container(Settings(database_url=sqlite_url, kafka_bootstrap=""), make_engine(sqlite_url))
    publish(built.contracts, contract_text())
    for i in range(4):
        conversation(built.store, turns=2, specialist=("chat", "coding")[i % 2])
    yield built
    built.close()
    get_settings.cache_clear()



def test_a_broken_draft_fails_its_dry_run_its_publish_and_its_re_evaluation(container: Container) -> None:
    hcp("evaluator", "--once")
    draft = container.contracts.create_draft("default", BROKEN, "t", 1)
    dry = hcp("contract", "dry-run", "default", str(draft.version), "--last", "8", code=1)
    assert "errors 8 (100.0%)" in dry and "8 of 8 applicable subjects errored" in dry
    assert "per criterion" in dry and "per specialist" in dry and "coding" in dry
    assert "8 of 8" in hcp("contract", "dry-run", "default", str(draft.version), "--last", "8",
                           "--max-error-rate", "0.5", code=1)

    refused = hcp("contract", "publish", "default", str(draft.version), code=4)
    assert "was not published: 8 of 8 applicable subjects" in refused
    forced = hcp("contract", "publish", "default", str(draft.version), "--force", "--reason", "demo")
    assert "(forced)" in forced and f"published default@{draft.version}" in forced

    done = hcp("contract", "reevaluate", "default", str(draft.version), code=1)
    assert "failed: 0 scored, 8 errored, 0 skipped" in done and "criterion:feedback" in done


def test_evaluator_once_says_nothing_about_a_job_that_already_ran(container: Container) -> None:
    first = hcp("evaluator", "--once")
    assert "re-evaluation of default@1 started" in first
    # another group reads the same log again: the publication's job exists and is done
    second = hcp("evaluator", "--once", "--group", "another")
    assert "started" not in second and "re-evaluating" not in second


def test_compare_prints_stored_rewards_per_criterion_and_specialist(container: Container) -> None:
    hcp("evaluator", "--once")
    publish(container.contracts, contract_text(answered_weight=3.0), parent=1)
    hcp("evaluator", "--once")
    shown = hcp("contract", "compare", "default", "1", "2")
    assert "stored rewards of default@2 on its latest 8 subjects against default@1" in shown
    assert "answered" in shown and "feedback" in shown and "coding" in shown
