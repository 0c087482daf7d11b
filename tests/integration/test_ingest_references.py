"""Serving records are checked against the registry at ingest (both databases, over HTTP)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from access.keys import create_key
from api.app import create_app
from tests.unit.evaluators.factories import contract_text, publish
from tests.unit.trainer_core import fixtures
from tests.unit.trainer_core.factories import seed_dataset
from tests.unit.trainer_core.fixtures import fake_model_dir, fake_train

container, parts, recorder = fixtures.container, fixtures.parts, fixtures.recorder


@pytest.fixture
def api(parts, tmp_path):
    published = publish(parts.contracts, contract_text())
    # Under the contract that serves: a manifest draws from the serving contract's rewards.
    seed_dataset(parts.engine, parts.store, "coding", contract=("default", 1, published.content_hash))
    parts.registry.register_base_model("tiny", fake_model_dir(tmp_path / "base"), "tester")
    adapter = fake_train(parts, parts.triggers.fire_manual("coding", "t", "root").run_id)
    client = TestClient(create_app(parts))
    writer = {"Authorization": f"Bearer {create_key(parts.engine, ['events:write'])}"}
    return client, writer, adapter.adapter_id


def post(api, *events: dict) -> tuple[int, dict]:
    client, writer, _ = api
    response = client.post("/v1/events", json={"events": list(events)}, headers=writer)
    return response.status_code, response.json()


def route(adapter: str, specialist: str = "coding", **extra: object) -> dict:
    return {"stream_id": "s-1", "type": "route.decided",
            "payload": {"specialist": specialist, "adapter_version": adapter, **extra}}


def test_an_unknown_adapter_version_is_refused_naming_the_field(api, parts):
    head = parts.store.head()
    status, body = post(api, route("coding@99"))
    assert status == 422 and body["error"]["field"] == "events[0].payload.adapter_version"
    assert "no adapter version 'coding@99'" in body["error"]["message"]
    status, body = post(api, {"stream_id": "s-1", "type": "turn.user", "payload": {"text": "hi"},
                              "metadata": {"contract": "default@9"}})
    assert status == 422 and body["error"]["field"] == "events[0].metadata.contract"
    status, body = post(api, route("coding@1", specialist="nobody"))
    assert status == 422 and body["error"]["field"] == "events[0].payload.specialist"
    assert parts.store.head() == head  # nothing stored


def test_known_names_the_bare_base_and_the_documented_escape_are_stored(api, parts):
    _, _, adapter = api
    ok = {"stream_id": "s-2", "type": "turn.user", "payload": {"text": "hi"},
          "metadata": {"specialist": "coding", "adapter_version": adapter, "contract": "default@1"}}
    assert post(api, route(adapter), ok)[0] == 201
    assert post(api, route("chat@0", specialist="chat"))[0] == 201  # the base, no adapter yet
    assert post(api, route("coding@99", ahead_of_registry=True))[0] == 201
    stored = parts.store.read_stream("s-1")[-1]
    assert stored.payload["ahead_of_registry"] is True
