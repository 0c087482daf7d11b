"""A broken version is not reported as a success: dry runs, the publish check, re-evaluation
verdicts, per-criterion / per-specialist reports and comparisons of stored rewards."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from access.keys import create_key
from api.app import create_app
from evaluators.dryrun import Selection
from evaluators.publishing import PublishRefused
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.unit.evaluators.factories import contract_text, conversation, publish

# An int/double mistake the static check cannot see (dyn hides the type): every subject errors.
BROKEN = contract_text(feedback="dyn(counts.answered_turns) * 0.5")


@pytest.fixture
def container(database_url: str) -> Iterator[Container]:
    settings = Settings(database_url=database_url, kafka_bootstrap="", publish_check_subjects=50)
    built = Container(settings, make_engine(database_url))
    yield built
    built.close()


def traffic(container: Container) -> None:
    publish(container.contracts, contract_text())
    for i in range(6):
        conversation(container.store, turns=2, thumbs=("up", "down")[i % 2],
                     specialist=("chat", "coding")[i % 2])
    container.evaluator().drain(timeout=60)


def test_a_dry_run_reports_the_error_rate_per_criterion_and_per_specialist(container: Container) -> None:
    traffic(container)
    draft = container.contracts.create_draft("default", BROKEN, "t", 1)
    result = container.dry_runs.run("default", draft.version, Selection(last=50))
    report = result.report
    assert (report.applicable, report.errors, report.error_rate) == (12, 12, 1.0)
    assert not result.passed and result.to_json()["check"]["passed"] is False
    assert report.criteria["feedback"]["errors"] == 12 and report.criteria["answered"]["errors"] == 0
    assert report.criteria["answered"]["mean_delta"] == 0.0
    assert set(report.specialists) == {"chat", "coding"}
    assert report.specialists["coding"]["errors"] == 6 and report.specialists["chat"]["count"] == 6

    fine = container.contracts.create_draft("default", contract_text(answered_weight=3.0), "t", 1)
    good = container.dry_runs.run("default", fine.version, Selection(last=50))
    assert good.passed and good.report.error_rate == 0.0
    assert good.report.specialists["chat"]["mean_delta"] is not None


def test_publishing_a_version_that_errors_on_recent_history_needs_force(container: Container) -> None:
    traffic(container)
    draft = container.contracts.create_draft("default", BROKEN, "t", 1)
    with pytest.raises(PublishRefused, match="12 of 12 applicable subjects of the last 12 errored"):
        container.publisher.publish("default", draft.version, "t")
    assert container.contracts.get("default", draft.version).status == "draft"

    done, check = container.publisher.publish("default", draft.version, "t", force=True,
                                              reason="the feedback criterion is fixed in v3")
    assert done.status == "published" and check is not None and not check.passed
    event = next(e for e in container.contracts.history("default")
                 if e.type == "contract.published" and e.payload["version"] == draft.version)
    assert event.payload["forced"] == "the feedback criterion is fixed in v3"
    assert event.payload["check"]["errors"] == 12

    # its re-evaluation ends failed, with the counts apart
    container.evaluator().drain(timeout=60)
    [job] = container.reevaluations.jobs("default", draft.version)
    assert (job.status, job.subjects_scored, job.subjects_errored) == ("failed", 0, 12)
    assert "12 of 12 applicable subjects errored" in (job.error or "")
    assert "criterion:feedback" in (job.error or "")


def test_a_re_evaluation_with_few_errors_is_degraded(container: Container) -> None:
    traffic(container)
    # errors only on thumbs-down turns of coding: 6 of 12
    half = contract_text(feedback="specialist == 'coding' ? dyn(1) * 0.5 : 1.0")
    draft = container.contracts.create_draft("default", half, "t", 1)
    container.publisher.publish("default", draft.version, "t", force=True, reason="testing")
    container.evaluator().drain(timeout=60)
    [job] = container.reevaluations.jobs("default", draft.version)
    assert (job.status, job.subjects_scored, job.subjects_errored) == ("degraded", 6, 6)


def test_the_publish_route_refuses_and_records_a_forced_publish(container: Container) -> None:
    traffic(container)
    draft = container.contracts.create_draft("default", BROKEN, "t", 1)
    writer = {"Authorization": f"Bearer {create_key(container.engine, ['contracts:write'])}"}
    with TestClient(create_app(container)) as client:
        url = f"/v1/contracts/default/versions/{draft.version}/publish"
        refused = client.post(url, headers=writer)
        no_reason = client.post(url, json={"force": True}, headers=writer)
        forced = client.post(url, json={"force": True, "reason": "known"}, headers=writer)
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "publish_check_failed"
    assert no_reason.status_code == 422
    assert forced.status_code == 200 and forced.json()["check"]["passed"] is False


def test_stored_rewards_of_two_published_versions_are_compared(container: Container) -> None:
    traffic(container)
    publish(container.contracts, contract_text(answered_weight=3.0), parent=1)
    container.evaluator().drain(timeout=60)
    result = container.comparisons.compare("default", 1, 2, last=100)
    report = result.report
    assert result.subjects == report.compared == 12
    assert report.criteria["answered"]["mean_delta"] == 0.0
    assert report.mean_delta is not None and report.mean_delta > 0  # down-voted turns gain
    assert report.specialists["coding"]["compared"] == 6

    # A comparison is a view of stored rewards: it needs rewards:read beside contracts:read.
    reader = {"Authorization": "Bearer " + create_key(container.engine,
                                                      ["contracts:read", "rewards:read"])}
    with TestClient(create_app(container)) as client:
        response = client.get("/v1/contracts/default/compare", params={"a": 1, "b": 2},
                              headers=reader)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["source"] == "stored rewards" and body["report"]["compared"] == 12
    assert set(body["report"]["specialists"]) == {"chat", "coding"}
