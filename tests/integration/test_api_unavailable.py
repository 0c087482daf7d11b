"""When a dependency is down the API says so: a JSON 503 with Retry-After, and /healthz
names the dependency. The database is "down" by pointing an app at a PostgreSQL URL on a
port where nothing listens (the shared server is never stopped)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import make_url

from access.keys import ApiKeys, create_key
from api.app import create_app
from events.sql_store import SqlEventStore
from hcp.bootstrap import Container, bootstrap
from hcp.settings import Settings
from kernel.db import make_engine
from tests.ports import free_port


@pytest.fixture
def refused_url(postgres_admin_url: str) -> str:
    """A PostgreSQL URL whose server refuses connections."""
    return make_url(postgres_admin_url).set(port=free_port()).render_as_string(hide_password=False)


def down_container(url: str, tmp_path: Path, **settings: object) -> Container:
    # No schema check at boot: that would itself need the database.
    config = Settings(database_url=url, data_dir=tmp_path, unavailable_retry_after_s=7,
                      health_timeout_s=2.0, **settings)  # type: ignore[arg-type]
    return Container(settings=config, engine=make_engine(url))


def assert_unavailable(response: object) -> None:
    assert response.status_code == 503, response.text  # type: ignore[attr-defined]
    assert response.headers["Retry-After"] == "7"  # type: ignore[attr-defined]
    assert response.json()["error"]["code"] == "database_unavailable"  # type: ignore[attr-defined]


def test_the_key_check_answers_503_when_the_database_is_down(refused_url: str, tmp_path: Path) -> None:
    container = down_container(refused_url, tmp_path)
    client = TestClient(create_app(container))

    assert_unavailable(client.get("/v1/events", headers={"Authorization": "Bearer hcp_0123_x"}))
    assert_unavailable(client.post("/v1/events", json={"events": []},
                                   headers={"Authorization": "Bearer hcp_0123_x"}))
    assert_unavailable(client.get("/metrics", headers={"Authorization": "Bearer hcp_0123_x"}))
    health = client.get("/healthz")
    assert health.status_code == 503 and health.headers["Retry-After"] == "7"
    body = health.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["database"]["status"] == "down"
    assert body["checks"]["database"]["error"] == "OperationalError"


@pytest.fixture
def routes_down(postgres_url: str, refused_url: str, tmp_path: Path) -> Iterator[tuple[TestClient, str]]:
    """Keys checked against a live database, every service on the unreachable one: the
    routes themselves meet the outage."""
    live = make_engine(postgres_url)
    key = create_key(live, ["admin"])
    container = down_container(refused_url, tmp_path)
    container.keys = ApiKeys(live, SqlEventStore(live))  # type: ignore[misc]
    yield TestClient(create_app(container)), key
    live.dispose()


@pytest.mark.parametrize(("method", "path", "body"), [
    ("GET", "/v1/events", None),
    ("GET", "/v1/streams/s", None),
    ("POST", "/v1/events", {"events": [{"stream_id": "s", "type": "x.t", "payload": {}}]}),
    ("GET", "/v1/contracts", None),
    ("GET", "/v1/rewards", None),
    ("GET", "/v1/specialists", None),
    ("GET", "/v1/training-runs", None),
    ("GET", "/v1/audit/verify", None),
])
def test_routes_answer_503_when_the_database_is_down(routes_down: tuple[TestClient, str], method: str,
                                                    path: str, body: object) -> None:
    client, key = routes_down
    assert_unavailable(client.request(method, path, json=body, headers={"Authorization": f"Bearer {key}"}))


def test_healthz_reports_each_configured_dependency(database_url: str, kafka_bootstrap: str,
                                                   redis_url: str, tmp_path: Path) -> None:
    container = bootstrap(Settings(database_url=database_url, data_dir=tmp_path,
                                   kafka_bootstrap=kafka_bootstrap, redis_url=redis_url))
    response = TestClient(create_app(container)).get("/healthz")
    container.close()

    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["status"], body["mode"]) == ("ok", "services")
    assert {name: check["status"] for name, check in body["checks"].items()} == {
        "database": "ok", "kafka": "ok", "redis": "ok"}


def test_healthz_names_the_dependency_that_is_down(database_url: str, tmp_path: Path) -> None:
    port = free_port()
    container = bootstrap(Settings(database_url=database_url, data_dir=tmp_path,
                                   redis_url=f"redis://127.0.0.1:{port}/0",
                                   kafka_bootstrap=f"127.0.0.1:{port}", health_timeout_s=1.0))
    response = TestClient(create_app(container)).get("/healthz")
    container.close()

    assert response.status_code == 503
    checks = response.json()["checks"]
    assert {name: check["status"] for name, check in checks.items()} == {
        "database": "ok", "kafka": "down", "redis": "down"}
    assert checks["kafka"]["latency_ms"] <= 1500
