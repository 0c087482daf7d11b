"""The reward routes: query under a version or the latest published one; re-evaluation progress."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from access.keys import create_key
from api.app import create_app
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.unit.evaluators.factories import contract_text, conversation, publish


@pytest.fixture
def container(database_url: str) -> Iterator[Container]:
    built = Container(Settings(database_url=database_url, kafka_bootstrap=""), make_engine(database_url))
    yield built
    built.close()


def bearer(container: Container, *scopes: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {create_key(container.engine, list(scopes))}"}


@pytest.fixture
def scored(container: Container) -> list[str]:
    """Three scored conversations under default@1 and default@2 (two turns each)."""
    publish(container.contracts, contract_text())
    streams = [conversation(container.store, turns=2) for _ in range(3)]
    publish(container.contracts, contract_text(answered_weight=2.0), parent=1)
    container.evaluator().drain(timeout=60)
    return streams


def test_rewards_under_a_version_or_the_latest_published(container: Container, scored: list[str]) -> None:
    reader = bearer(container, "rewards:read")
    with TestClient(create_app(container)) as client:
        v1 = client.get("/v1/rewards", params={"contract": "default", "version": "1"}, headers=reader)
        latest = client.get("/v1/rewards", params={"contract": "default@latest"}, headers=reader)
        every = client.get("/v1/rewards", params={"limit": 4}, headers=reader)
        page2 = client.get("/v1/rewards", params={"after": every.json()["next_after"]}, headers=reader)
        stream = client.get("/v1/rewards", params={"stream_id": scored[0]}, headers=reader)
        one = client.get(f"/v1/rewards/{latest.json()['rewards'][0]['reward_id']}", headers=reader)

    assert {r["contract"]["version"] for r in v1.json()["rewards"]} == {1}
    assert len(v1.json()["rewards"]) == 6
    assert latest.json()["contract"] == {"name": "default", "version": 2}
    assert {r["contract"]["version"] for r in latest.json()["rewards"]} == {2}
    assert len(every.json()["rewards"]) + len(page2.json()["rewards"]) == 12
    assert every.json()["head"] == 12
    assert {r["subject"]["stream_id"] for r in stream.json()["rewards"]} == {scored[0]}
    reward = one.json()
    assert reward["evaluator_version"] and reward["contract"]["content_hash"]
    assert set(reward) >= {"score", "components", "gates", "split", "eligible", "specialist",
                           "adapter_version", "subject", "errors"}


def test_reward_routes_check_the_scope_and_the_query(container: Container, scored: list[str]) -> None:
    reader = bearer(container, "rewards:read")
    with TestClient(create_app(container)) as client:
        assert client.get("/v1/rewards").status_code == 401
        assert client.get("/v1/rewards", headers=bearer(container, "events:read")).status_code == 403
        assert client.get("/v1/rewards", params={"version": "1"}, headers=reader).status_code == 422
        assert client.get("/v1/rewards", params={"contract": "nope@latest"},
                          headers=reader).status_code == 404
        assert client.get("/v1/rewards/00000000-0000-0000-0000-000000000000",
                          headers=reader).status_code == 404


def test_reevaluation_progress_route(container: Container, scored: list[str]) -> None:
    reader, writer = bearer(container, "contracts:read"), bearer(container, "contracts:write")
    with TestClient(create_app(container)) as client:
        progress = client.get("/v1/contracts/default/versions/2/reevaluation", headers=reader)
        started = client.post("/v1/contracts/default/versions/2/reevaluation",
                              json={"from_position": 5}, headers=writer)
        refused = client.post("/v1/contracts/default/versions/2/reevaluation", json={}, headers=reader)

    [job] = progress.json()["jobs"]
    assert (job["status"], job["progress"], job["from_position"]) == ("succeeded", 1.0, 1)
    assert job["done_position"] == job["to_position"]
    assert started.status_code == 202
    assert (started.json()["from_position"], started.json()["status"]) == (5, "running")
    assert refused.status_code == 403
