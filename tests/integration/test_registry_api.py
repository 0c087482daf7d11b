"""The registry and training routes over HTTP: scopes, status codes, and what they return."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from access.keys import create_key
from api.app import create_app
from tests.unit.trainer_core import fixtures
from tests.unit.trainer_core.factories import seed_contract, seed_dataset
from tests.unit.trainer_core.fixtures import fake_model_dir, fake_train

container, parts, recorder = fixtures.container, fixtures.parts, fixtures.recorder


@pytest.fixture
def api(container, parts, tmp_path):
    digest = seed_contract(parts.engine)
    seed_dataset(parts.engine, parts.store, "coding", contract=("default", 1, digest))
    client = TestClient(create_app(container))
    keys = {scope: create_key(container.engine, [scope], label=scope.replace(":", "-"))
            for scope in ("registry:read", "registry:write", "train:write", "events:read")}

    def as_(scope: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {keys[scope]}"}

    return client, as_, fake_model_dir(tmp_path / "base")


def test_scopes_guard_every_route(api):
    client, as_, _ = api
    assert client.get("/v1/specialists").status_code == 401
    assert client.get("/v1/specialists", headers=as_("events:read")).status_code == 403
    assert client.get("/v1/specialists", headers=as_("registry:read")).status_code == 200
    body = {"adapter_id": None, "reason": "x"}
    assert client.put("/v1/specialists/coding/aliases/production", json=body,
                      headers=as_("registry:read")).status_code == 403
    assert client.post("/v1/training-runs", json={"specialist": "coding"},
                       headers=as_("registry:write")).status_code == 403


def test_register_fire_promote_and_resolve_over_http(api, parts, recorder):
    client, as_, base = api
    created = client.post("/v1/base-models", json={"name": "tiny", "path": str(base)},
                          headers=as_("registry:write"))
    assert created.status_code == 201 and created.json()["registered_by"] == "key:registry-write"
    fired = client.post("/v1/triggers/coding/fire", json={"reason": "first"}, headers=as_("train:write"))
    assert fired.status_code == 201, fired.text
    run = fired.json()["run"]
    assert run["status"] == "queued" and recorder.sent == [run["run_id"]]
    again = client.post("/v1/training-runs", json={"specialist": "coding"}, headers=as_("train:write"))
    assert again.status_code == 200 and again.json()["run"]["run_id"] == run["run_id"]

    adapter = fake_train(parts, run["run_id"])
    shown = client.get(f"/v1/training-runs/{run['run_id']}", headers=as_("registry:read")).json()
    assert shown["status"] == "succeeded" and shown["adapter_id"] == adapter.adapter_id
    promoted = client.post(f"/v1/adapters/{adapter.adapter_id}/promote", json={"reason": "ship it"},
                           headers=as_("registry:write"))
    assert promoted.status_code == 200 and promoted.json()["status"] == "promoted"
    resolved = client.get("/v1/specialists/coding/resolve?alias=production",
                          headers=as_("registry:read")).json()
    assert resolved["adapter_id"] == adapter.adapter_id
    assert resolved["artifact_sha256"] == adapter.artifact_sha256
    assert resolved["artifact_uri"].startswith("file://") and resolved["base_model"]["name"] == "tiny"
    move = client.get("/v1/specialists/coding/aliases/production", headers=as_("registry:read")).json()
    at = move["move"]["moved_at"]
    earlier = client.get("/v1/specialists/coding/aliases/production",
                         params={"at": "2000-01-01T00:00:00Z"}, headers=as_("registry:read"))
    assert earlier.status_code == 404
    assert client.get("/v1/specialists/coding/aliases/production", params={"at": at},
                      headers=as_("registry:read")).json()["adapter_id"] == adapter.adapter_id
    lineage = client.get(f"/v1/adapters/{adapter.adapter_id}/lineage", headers=as_("registry:read"))
    assert lineage.json()["verified"] and lineage.json()["chain"][0]["manifest"]["reward_count"] == 12


def test_errors_map_to_http_statuses(api):
    client, as_, _ = api
    assert client.get("/v1/adapters/coding@9", headers=as_("registry:read")).status_code == 404
    assert client.get("/v1/specialists/nope/resolve", headers=as_("registry:read")).status_code == 404
    rollback = client.post("/v1/specialists/coding/aliases/production/rollback", json={"reason": "r"},
                           headers=as_("registry:write"))
    assert rollback.status_code == 409
    no_base = client.post("/v1/triggers/coding/fire", json={}, headers=as_("train:write"))
    assert no_base.status_code == 422 and "base model" in no_base.json()["error"]["message"]
    bad_policy = client.put("/v1/triggers/coding", json={"min_new_rewards": 0},
                            headers=as_("train:write"))
    assert bad_policy.status_code == 422


def test_policies_and_firings_are_listed(api, parts):
    client, as_, base = api
    client.post("/v1/base-models", json={"name": "tiny", "path": str(base)}, headers=as_("registry:write"))
    configured = client.put("/v1/triggers/coding", json={"min_new_rewards": 5},
                            headers=as_("train:write"))
    assert configured.status_code == 200 and configured.json()["source"] == "api"
    evaluated = client.post("/v1/triggers/evaluate", headers=as_("train:write")).json()
    fired = [e for e in evaluated if e["firing"]]
    assert [e["specialist"] for e in fired] == ["coding"]
    assert "8 new subjects" in fired[0]["note"]  # train split only
    firings = client.get("/v1/triggers/firings", headers=as_("registry:read")).json()
    assert len(firings) == 1 and firings[0]["policy"] == "count"
    state = client.get("/v1/triggers/coding", headers=as_("registry:read")).json()["state"]
    assert state["eligible_head"] == 12 and state["parent_adapter_id"] is None
