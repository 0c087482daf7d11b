"""Input that used to be a 500, or stored and then unreadable, is now a clean 4xx naming the
field, with nothing stored; and what is already stored is always readable. SQLite and
PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from access.keys import create_key
from api.app import create_app
from events.model import NewEvent
from hcp.bootstrap import Container, bootstrap
from hcp.settings import Settings
from kernel.canonical import canonical_sha256
from tests.unit.evaluators.factories import contract_text, publish


def client_events(container: Container) -> int:
    """Events the requests stored (creating the test's key wrote an api_key.created event)."""
    return sum(1 for e in container.store.iter_all(raw=True) if not e.stream_id.startswith("api_key:"))


@pytest.fixture
def api(database_url: str, tmp_path: Path) -> Iterator[tuple[TestClient, Container]]:
    container = bootstrap(Settings(database_url=database_url, data_dir=tmp_path, max_json_depth=32))
    key = create_key(container.engine, ["admin"])
    client = TestClient(create_app(container), headers={"Authorization": f"Bearer {key}"})
    with client:
        yield client, container
    container.close()


def post_raw(client: TestClient, path: str, body: str | bytes) -> Any:
    return client.post(path, content=body, headers={"Content-Type": "application/json"})


def batch(payload: str, extra: str = "") -> str:
    return '{"events": [{"stream_id": "s", "type": "x.test", "payload": ' + payload + extra + "}]}"


def nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


@pytest.mark.parametrize(("body", "status", "field"), [
    (batch(nested(300)), 422, "events[0].payload" + ".a" * 32),
    (batch('{"x": NaN}'), 422, "events[0].payload.x"),
    (batch('{"x": [1, Infinity]}'), 422, "events[0].payload.x[1]"),
    (batch('{"x": 1e400}'), 422, "events[0].payload.x"),
    (batch('{"x": "\\ud800"}'), 422, "events[0].payload.x"),
    (batch('{"x": "a\\u0000b"}'), 422, "events[0].payload.x"),
    (batch('{"x": 1, "x": 2}'), 422, "events[0].payload.x"),
    (batch("{}", ', "metadata": {"occurred_at": "9999-12-31T23:59:59-23:59"}'), 422,
     "events[0].metadata.occurred_at"),
    (batch("{}", ', "expected_seq": 9223372036854775808'), 422, "events[0].expected_seq"),
    ('{"events": [{"stream_id": "\\udfff", "type": "x.t", "payload": {}}]}', 422, "events[0].stream_id"),
    # A lone surrogate in a key is named by its escape (the path cannot carry it as it is).
    (batch('{"\\ud800": 1}'), 422, "events[0].payload.\\ud800"),
    (batch('{"a": {"b\\udfff": [1]}}'), 422, "events[0].payload.a.b\\udfff"),
    (batch('{"\\ud800": 1, "\\ud800": 2}'), 422, "events[0].payload.\\ud800"),
    (batch("{}", ', "metadata": {"\\udc00": 1}'), 422, "events[0].metadata.\\udc00"),
    (b'{"events": [{"stream_id": "s", "type": "x.t", "payload": {"t": "\xff"}}]}', 400, "body"),
    ("[" * 50_000 + "]" * 50_000, 400, "body"),
])
def test_bad_event_input_is_a_4xx_naming_the_field_and_stores_nothing(
        api: tuple[TestClient, Container], body: str, status: int, field: str) -> None:
    client, container = api
    response = post_raw(client, "/v1/events", body)

    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["field"] == field and error["message"]
    assert client_events(container) == 0


def test_an_accepted_payload_is_stored_and_served_exactly_as_sent(api: tuple[TestClient, Container]) -> None:
    client, _ = api
    payload = {"n": 12345678901234567890, "f": 0.1, "s": "é😀", "deep": json.loads(nested(31))}
    created = client.post("/v1/events", json={"events": [
        {"stream_id": "s", "type": "x.test", "payload": payload}]})
    assert created.status_code == 201, created.text

    event = client.get(f"/v1/events/{created.json()['events'][0]['event_id']}").json()
    assert event["payload"] == payload
    assert event["payload_digest"] == canonical_sha256(payload)


@pytest.mark.parametrize("path", ["/v1/events?after=9223372036854775808",
                                  "/v1/events?after=-1",
                                  "/v1/streams/s?after_seq=99999999999999999999",
                                  "/v1/rewards?after=9223372036854775808",
                                  "/v1/rewards?contract=default@99999999999",
                                  "/v1/rewards?contract=default@²",
                                  "/v1/contracts/default/versions/2147483648",
                                  "/v1/contracts/default/diff?a=1&b=9223372036854775808",
                                  "/v1/specialists/coding/aliases/production?at=9999-12-31T23:59:59-23:59"])
def test_out_of_range_parameters_are_422_naming_the_parameter(api: tuple[TestClient, Container],
                                                             path: str) -> None:
    client, _ = api
    response = client.get(path)

    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["field"].split(".")[-1] in path, error  # e.g. query.after


def _routes_taking_a_time() -> list[str]:
    """Every GET route with a date-time query parameter, its path filled in (names of the
    contract and specialist the test publishes)."""
    found = []
    for path, item in create_app().openapi()["paths"].items():
        for parameter in item.get("get", {}).get("parameters", []):
            if parameter["in"] == "query" and "date-time" in json.dumps(parameter["schema"]):
                filled = path.replace("{name}", "coding" if path.startswith("/v1/specialists") else "default")
                found.append(filled.replace("{specialist}", "coding").replace("{alias}", "production")
                             + f"?{parameter['name']}=")
    return found


TIME_ROUTES = _routes_taking_a_time()


def test_the_routes_taking_a_time_are_all_found() -> None:
    assert len(TIME_ROUTES) >= 5 and any("/serving" in r for r in TIME_ROUTES)


# Both parse as ISO 8601, and neither has a UTC form: one is past year 9999 in UTC, one before year 1.
@pytest.mark.parametrize("moment", ["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00"])
@pytest.mark.parametrize("route", TIME_ROUTES)
def test_a_time_with_no_utc_form_is_422_on_every_route_that_takes_one(
        api: tuple[TestClient, Container], route: str, moment: str) -> None:
    client, container = api
    publish(container.contracts, contract_text())  # a version that serves, so the time is compared

    response = client.get(route + quote(moment))

    assert response.status_code == 422, response.text
    assert response.json()["error"]["field"] == "query." + route.rsplit("?", 1)[1].rstrip("=")


def test_a_lone_surrogate_in_any_body_key_is_422_naming_it_escaped(api: tuple[TestClient, Container]) -> None:
    client, _ = api
    response = post_raw(client, "/v1/contracts/validate", '{"document": "", "\\udbff": 1}')

    assert response.status_code == 422, response.text
    assert response.json()["error"]["field"] == "\\udbff"


def test_out_of_range_body_integers_are_422(api: tuple[TestClient, Container]) -> None:
    client, _ = api
    response = client.post("/v1/contracts/default/versions/1/reevaluation",
                           json={"from_position": 2**63})

    assert response.status_code == 422
    assert response.json()["error"]["field"] == "from_position"


def test_a_lone_surrogate_in_a_description_is_422(api: tuple[TestClient, Container]) -> None:
    client, container = api
    response = post_raw(client, "/v1/specialists", '{"name": "poetry", "description": "\\ud800"}')

    assert response.status_code == 422
    assert response.json()["error"]["field"] == "description"
    assert "poetry" not in [s["name"] for s in client.get("/v1/specialists").json()]


@pytest.mark.parametrize(("files", "path_suffix"), [
    ({"model.safetensors": b"w", "config.json": b'{"name": "\xff"}'}, ""),
    ({"model.safetensors": b"w", "config.json": b'{"x": NaN}'}, ""),
    ({"model.safetensors": b"w", "config.json": b"[1, 2]"}, ""),
    ({"model.safetensors": b"w", "config.json": b"{}"}, "\x00"),
])
def test_unreadable_base_models_are_422_on_the_path(api: tuple[TestClient, Container], tmp_path: Path,
                                                   files: dict[str, bytes], path_suffix: str) -> None:
    client, _ = api
    root = tmp_path / "model"
    root.mkdir()
    for name, content in files.items():
        (root / name).write_bytes(content)

    response = client.post("/v1/base-models", json={"name": "tiny", "path": str(root) + path_suffix})

    assert response.status_code == 422, response.text
    assert response.json()["error"]["field"] == "path"
    assert client.get("/v1/base-models").json() == []


def test_events_stored_before_the_limits_are_still_served(api: tuple[TestClient, Container]) -> None:
    client, container = api
    deep: Any = 1
    for _ in range(300):
        deep = {"a": deep}
    stored = container.store.append([NewEvent(stream_id="old", type="x.old", payload={"deep": deep})])
    event_id = stored[0].event.event_id

    one = client.get(f"/v1/events/{event_id}")
    stream = client.get("/v1/streams/old")
    feed = client.get("/v1/events")

    assert (one.status_code, stream.status_code, feed.status_code) == (200, 200, 200)
    assert one.content.startswith(b'{"event_id"') and b'{"a":' * 300 in one.content
    assert one.headers["content-type"] == "application/json"
    position = stored[0].event.position  # after the test key's api_key.created event
    assert stream.json()["next_after"] == 1 and feed.json()["head"] == position


@pytest.mark.parametrize(("method", "path", "allowed"), [
    ("DELETE", "/v1/events", {"GET", "POST"}),
    ("PATCH", "/v1/webhooks", {"GET", "POST"}),
    ("POST", "/v1/specialists/chat/aliases/production", {"GET", "PUT"}),
    ("PUT", "/healthz", {"GET"})])
def test_a_405_lists_every_method_of_the_path(api: tuple[TestClient, Container], method: str,
                                              path: str, allowed: set[str]) -> None:
    client, _ = api
    answer = client.request(method, path)
    assert answer.status_code == 405, answer.text
    assert set(answer.headers["allow"].split(", ")) == allowed
    assert answer.json()["error"]["code"] == "method_not_allowed"
