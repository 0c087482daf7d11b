"""Dry runs: a draft scored over recent history against a published version, writing nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from access.keys import create_key
from api.app import create_app
from evaluators.dryrun import DryRuns, Selection
from evaluators.tables import reevaluations, reward_records
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.unit.evaluators.factories import FEEDBACK, contract_text, conversation, publish


@pytest.fixture
def container(database_url: str) -> Iterator[Container]:
    built = Container(Settings(database_url=database_url, kafka_bootstrap=""), make_engine(database_url))
    yield built
    built.close()


def written(container: Container) -> tuple[int, int, int]:
    with container.engine.connect() as conn:
        rewards = conn.execute(select(func.count()).select_from(reward_records)).scalar()
        jobs = conn.execute(select(func.count()).select_from(reevaluations)).scalar()
    return int(rewards or 0), int(jobs or 0), container.store.head()


def history(container: Container) -> dict[str, list[str]]:
    """Ten conversations: thumbs up, down, and none; each has two turns."""
    kinds = {"up": [], "down": [], None: []}  # type: ignore[var-annotated]
    for i in range(10):
        thumbs = ("up", "down", None)[i % 3]
        kinds[thumbs].append(conversation(container.store, turns=2, thumbs=thumbs))
    return kinds  # type: ignore[return-value]


def test_a_draft_is_compared_with_its_published_parent_and_nothing_is_written(container: Container) -> None:
    publish(container.contracts, contract_text())  # feedback 1/2 weight: down -> 0.5
    streams = history(container)
    container.evaluator().drain(timeout=60)
    # The draft makes feedback count four times more: thumbs down now fails eligibility.
    draft = container.contracts.create_draft("default", contract_text(
        answered_weight=0.25, feedback=FEEDBACK), "test", parent_version=1)
    before = written(container)

    result = DryRuns(container.store, container.contracts).run(
        "default", draft.version, Selection(last=12))

    assert written(container) == before
    report = result.report
    assert result.baseline is not None and result.baseline.version == 1
    assert result.subjects == report.count == report.compared == 12
    assert report.errors == 0
    # Down-voted turns go 0.5 -> 0.2 (ineligible), unrated 0.75 -> 0.6, up-voted stay 1.0.
    moves = {m.subject_id.split(":")[1]: (m.baseline, round(m.draft, 6)) for m in report.largest_movers}
    assert moves and all(moves[s] == (0.5, 0.2) for s in streams["down"] if s in moves)
    assert all(moves[s] == (0.75, 0.6) for s in streams[None] if s in moves)
    assert not set(streams["up"]) & set(moves) or all(moves[s] == (1.0, 1.0) for s in streams["up"]
                                                      if s in moves)
    assert report.largest_movers[0].delta == pytest.approx(-0.3)
    assert report.mean_delta is not None and report.mean_delta < 0
    assert report.became_eligible == 0 and report.became_ineligible > 0
    assert sum(report.histogram) == sum(report.baseline_histogram) == 12


def test_a_position_range_selects_the_subjects_closed_inside_it(container: Container) -> None:
    publish(container.contracts, contract_text())
    first = conversation(container.store, turns=2)
    lo = container.store.head() + 1
    second = conversation(container.store, turns=2)
    hi = container.store.head()
    conversation(container.store, turns=2)
    draft = container.contracts.create_draft("default", contract_text(answered_weight=2.0), "t", 1)

    result = DryRuns(container.store, container.contracts).run(
        "default", draft.version, Selection(from_position=lo, to_position=hi))

    assert result.subjects == 2
    assert {m.subject_id for m in result.report.largest_movers} <= {f"turn:{second}:1", f"turn:{second}:5"}
    assert first not in str(result.to_json())


def test_the_dry_run_route_answers_with_the_report(container: Container) -> None:
    publish(container.contracts, contract_text())
    history(container)
    draft = container.contracts.create_draft("default", contract_text(answered_weight=0.25), "t", 1)
    reader_key = create_key(container.engine, ["contracts:read", "events:read"])
    reader = {"Authorization": f"Bearer {reader_key}"}
    rewards_only = {"Authorization": f"Bearer {create_key(container.engine, ['rewards:read'])}"}
    # A dry run shows what rubrics make of event content: contracts:read alone is not enough.
    writer_key = create_key(container.engine, ["contracts:write", "contracts:read"])
    no_content = {"Authorization": f"Bearer {writer_key}"}

    with TestClient(create_app(container)) as client:
        url = f"/v1/contracts/default/versions/{draft.version}/dry-run"
        response = client.post(url, json={"last": 5, "baseline": 1}, headers=reader)
        refused = client.post(url, json={"last": 5}, headers=rewards_only)
        without_events = client.post(url, json={"last": 5}, headers=no_content)
        both = client.post(url, json={"last": 5, "from_position": 1}, headers=reader)
        missing = client.post("/v1/contracts/default/versions/99/dry-run", json={}, headers=reader)

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["draft"]["version"] == draft.version and body["baseline"]["version"] == 1
    assert body["subjects"] == 5 and len(body["report"]["histogram"]) == 10
    assert {"mean_delta", "became_eligible", "became_ineligible", "largest_movers"} <= set(body["report"])
    assert refused.status_code == without_events.status_code == 403
    assert both.status_code == 422
    assert missing.status_code == 404
