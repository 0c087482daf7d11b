"""The event routes over HTTP, on SQLite and PostgreSQL: ingest, idempotency, errors, keys."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient

from access.keys import create_key
from api.app import create_app
from hcp.bootstrap import Container, bootstrap
from hcp.settings import Settings


@dataclass
class Api:
    client: TestClient
    container: Container
    writer: dict[str, str]
    reader: dict[str, str]
    base: int  # the log head before a test's events: creating keys writes api_key.* events

    def post(self, body: Any, headers: dict[str, str] | None = None) -> Any:
        return self.client.post("/v1/events", json=body, headers=self.writer if headers is None else headers)

    def head(self) -> int:
        """How many events the test's requests stored."""
        return self.container.store.head() - self.base


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def api(database_url: str) -> Iterator[Api]:
    container = bootstrap(Settings(database_url=database_url, max_batch_events=3,
                                   max_payload_bytes=100))
    writer = bearer(create_key(container.engine, ["events:write"]))
    reader = bearer(create_key(container.engine, ["events:read"]))
    with TestClient(create_app(container)) as client:
        yield Api(client, container, writer, reader, container.store.head())
    container.close()


def turn(stream: str = "s", text: str = "hi", **extra: Any) -> dict[str, Any]:
    return {"stream_id": stream, "type": "turn.user", "payload": {"text": text}, **extra}


def test_a_batch_is_appended_and_can_be_read_back(api: Api) -> None:
    response = api.post({"events": [turn("a"),
                                    turn("b", metadata={"actor": "u1", "specialist": "chat"}),
                                    turn("a", "again")]})

    assert response.status_code == 201
    out = response.json()["events"]
    base = api.base
    assert [(e["stream_id"], e["stream_seq"], e["position"]) for e in out] == [
        ("a", 1, base + 1), ("b", 1, base + 2), ("a", 2, base + 3)]
    one = api.client.get(f"/v1/events/{out[1]['event_id']}", headers=api.reader).json()
    # The actor is the key that wrote it; what the client said is kept beside it.
    assert (one["payload"], one["metadata"]["claimed_actor"], one["hash"]) == (
        {"text": "hi"}, "u1", out[1]["hash"])
    assert one["metadata"]["actor"].startswith("key:")
    stream = api.client.get("/v1/streams/a", headers=api.reader).json()
    assert [e["payload"]["text"] for e in stream["events"]] == ["hi", "again"]
    feed = api.client.get(f"/v1/events?after={base + 1}&limit=1", headers=api.reader).json()
    assert ([e["position"] for e in feed["events"]], feed["next_after"], feed["head"]) == (
        [base + 2], base + 2, base + 3)
    slashed = "conv/2026/12"  # a stream id may hold "/", sent as is or as %2F
    assert api.post({"events": [turn(slashed)]}).status_code == 201
    for path in (f"/v1/streams/{slashed}", "/v1/streams/conv%2F2026%2F12"):
        read = api.client.get(path, headers=api.reader)
        assert read.status_code == 200 and [e["stream_id"] for e in read.json()["events"]] == [slashed]
    unseen = api.client.get("/v1/streams/line%0Abreak/and%23more", headers=api.reader)
    assert unseen.status_code == 200 and unseen.json()["events"] == []  # any character routes


def test_the_same_event_again_is_200_and_the_stored_event(api: Api) -> None:
    body = {"events": [turn(event_id=str(uuid.uuid4()))]}
    first = api.post(body)
    again = api.post(body)

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == first.json()
    assert api.head() == 1


def test_the_same_event_id_with_other_content_is_409(api: Api) -> None:
    event_id = str(uuid.uuid4())
    api.post({"events": [turn(text="original", event_id=event_id)]})

    response = api.post({"events": [turn("new"), turn(text="changed", event_id=event_id)]})

    assert response.status_code == 409
    error = response.json()["error"]
    assert (error["code"], error["field"]) == ("event_id_conflict", "events[1].event_id")
    assert api.head() == 1


def test_a_stale_expected_seq_is_409(api: Api) -> None:
    api.post({"events": [turn(expected_seq=0)]})
    assert api.post({"events": [turn(expected_seq=1)]}).status_code == 201

    response = api.post({"events": [turn("other"), turn(expected_seq=1)]})

    assert response.status_code == 409
    error = response.json()["error"]
    assert (error["code"], error["field"]) == ("wrong_expected_seq", "events[1].expected_seq")
    assert api.head() == 2


@pytest.mark.parametrize(("body", "status", "field"), [
    ({"events": [turn(), {**turn(), "type": "no.such"}]}, 422, "events[1].type"),
    ({"events": [turn(), {**turn(), "payload": {"txt": "hi"}}]}, 422, "events[1].payload.text"),
    ({"events": [turn(), turn(text="x" * 200)]}, 413, "events[1].payload"),
    ({"events": [turn()] * 4}, 413, "events"),
    ({"events": []}, 422, "events"),
    ({"events": [turn(), turn(event_id="not-a-uuid")]}, 422, "events[1].event_id"),
    ({"events": [turn(), turn(expected_seq=-1)]}, 422, "events[1].expected_seq"),
    ({"events": [turn(), turn(expected_seq="soon")]}, 422, "events[1].expected_seq"),
    ({"events": [turn(schema_version=5)]}, 422, "events[0].schema_version"),
    ({"events": [{**turn(), "type": "alias.moved"}]}, 422, "events[0].type"),
    ({"events": [turn(surprise=1)]}, 422, "events[0].surprise"),
    ({"events": [{"type": "turn.user", "payload": {"text": "hi"}}]}, 422, "events[0].stream_id"),
    ({"evnts": []}, 422, "events"),
])
def test_bad_input_is_a_4xx_naming_the_field_and_stores_nothing(api: Api, body: Any, status: int,
                                                                  field: str) -> None:
    response = api.post(body)

    assert response.status_code == status, response.text
    assert response.json()["error"]["field"] == field
    assert api.head() == 0


def test_malformed_json_is_400(api: Api) -> None:
    response = api.client.post("/v1/events", content=b'{"events": [', headers={
        **api.writer, "Content-Type": "application/json"})

    assert response.status_code == 400
    assert response.json()["error"] == {"code": "malformed_json", "field": "body",
                                        "message": "request body is not valid JSON"}
    assert api.head() == 0


def test_keys_are_required_and_scoped(api: Api) -> None:
    body = {"events": [turn()]}
    assert api.post(body, headers={}).status_code == 401
    unknown = api.post(body, headers=bearer("hcp_nope_nope"))
    assert unknown.status_code == 401 and unknown.json()["error"]["code"] == "unauthorized"
    refused = api.post(body, headers=api.reader)
    # the code docs/cli.md lists for a refusal (was "http_error" for every status)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
    assert "lacks the scope 'events:write'" in refused.json()["error"]["message"]
    assert api.client.get("/v1/events", headers=api.writer).status_code == 403
    nowhere = api.client.get("/v1/no-such-route", headers=api.writer)
    assert nowhere.status_code == 404 and nowhere.json()["error"]["code"] == "not_found"
    assert api.client.get("/v1/audit/verify", headers=api.reader).status_code == 403
    assert api.head() == 0

    admin = bearer(create_key(api.container.engine, ["admin"]))
    api.base += 1  # the key's api_key.created event
    assert api.post(body, headers=admin).status_code == 201
    assert api.client.get("/v1/audit/verify", headers=admin).json()["intact"] is True
