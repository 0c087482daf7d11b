"""The lineage and artifact routes over HTTP: scopes, shapes, refusals, and a downloaded
adapter that loads with AutoPeftModelForCausalLM."""

from __future__ import annotations

import hashlib
import json

import pytest
from fastapi.testclient import TestClient
from prov.model import ProvDocument

from access.keys import create_key
from api.app import create_app
from tests.integration.lineage_scenario import build
from tests.unit.trainer_core import fixtures
from trainer.registry.packaging import unpack_tar

container, parts, recorder = fixtures.container, fixtures.parts, fixtures.recorder


@pytest.fixture
def api(container, parts):
    client = TestClient(create_app(container))
    keys = {scope: create_key(container.engine, [scope], label=scope.replace(":", "-"))
            for scope in ("lineage:read", "registry:read")}
    return client, lambda scope: {"Authorization": f"Bearer {keys[scope]}"}


def test_lineage_routes_need_the_lineage_scope(api, parts, tmp_path):
    build(parts, tmp_path)
    client, as_ = api
    assert client.get("/v1/lineage/adapters/coding@2").status_code == 401
    assert client.get("/v1/lineage/adapters/coding@2", headers=as_("registry:read")).status_code == 403
    up = client.get("/v1/lineage/adapters/coding@2", headers=as_("lineage:read"))
    assert up.status_code == 200
    assert [v["adapter_id"] for v in up.json()["versions"]] == ["coding@2", "coding@1"]
    assert client.get("/v1/lineage/adapters/coding@9", headers=as_("lineage:read")).status_code == 404


def test_records_manifests_downstream_and_as_of_over_http(api, parts, tmp_path):
    history = build(parts, tmp_path)
    client, as_ = api
    headers = as_("lineage:read")
    page = client.get("/v1/lineage/adapters/coding@1/records", params={"limit": 5, "split": "train"},
                      headers=headers).json()
    assert page["total"] == 8 and len(page["records"]) == 5 and page["next_after"]
    assert page["records"][0]["events"][0]["type"] == "turn.user"
    bad_split = client.get("/v1/lineage/adapters/coding@1/records", params={"split": "test"},
                           headers=headers)
    assert bad_split.status_code == 422 and bad_split.json()["error"]["field"] == "query.split"

    manifest = client.get(f"/v1/manifests/{history.root.manifest_id}", headers=headers).json()
    assert manifest["verified"] and manifest["adapters"] == ["coding@1"]
    members = client.get(f"/v1/manifests/{history.root.manifest_id}/members", headers=headers).json()
    assert len(members["members"]) == 12 and members["next_after"] is None
    assert client.get("/v1/manifests/nope", headers=headers).status_code == 404

    event_id = history.first[0]["event_ids"][0]
    down = client.get("/v1/lineage/downstream", params={"event_id": event_id, "alias": "production"},
                      headers=headers).json()
    assert [a["adapter_id"] for a in down["adapters"]] == ["coding@1", "coding@2"]
    assert [w["adapter_id"] for w in down["windows"]] == ["coding@1", "coding@2"]
    by_contract = client.get("/v1/lineage/downstream", params={"contract": "default@1"},
                             headers=headers).json()
    assert by_contract["rewards"]["count"] == 17 and by_contract["source"]["kind"] == "contract_version"
    for params, field in (({}, "event_id"), ({"event_id": event_id, "tenant": "x"}, "tenant"),
                          ({"contract": "default"}, "contract"), ({"event_id": "x"}, "event_id")):
        refused = client.get("/v1/lineage/downstream", params=params, headers=headers)
        assert refused.status_code == 422 and refused.json()["error"]["field"] == f"query.{field}", params

    at = history.moves[0].moved_at.isoformat()
    state = client.get("/v1/lineage/as-of", params={"at": at}, headers=headers).json()
    assert [a["adapter_id"] for a in state["aliases"]] == ["coding@1"]
    assert client.get("/v1/lineage/as-of", params={"at": "yesterday"}, headers=headers).status_code == 422


def test_prov_json_reads_back_with_the_derivations(api, parts, tmp_path):
    build(parts, tmp_path)
    client, as_ = api
    body = client.get("/v1/lineage/adapters/coding@2/prov", headers=as_("lineage:read"))
    assert body.status_code == 200
    document = ProvDocument.deserialize(content=json.dumps(body.json()), format="json")
    derivations = {(str(r.formal_attributes[0][1]), str(r.formal_attributes[1][1]))
                   for r in document.get_records() if r.get_type().localpart == "Derivation"}
    assert ("adapter:coding%402", "adapter:coding%401") in derivations


@pytest.mark.train
def test_a_downloaded_adapter_loads_with_auto_peft(api, parts, tmp_path, monkeypatch):
    from peft import AutoPeftModelForCausalLM

    from tests.unit.trainer_core.factories import seed_contract, seed_dataset, tiny_base

    client, as_ = api
    seed_dataset(parts.engine, parts.store, "coding", contract=("default", 1, seed_contract(parts.engine)))
    parts.registry.register_base_model("tiny", tiny_base(tmp_path / "tiny"), "tester")
    run_id = parts.triggers.fire_manual("coding", "tester", "first").run_id
    parts.runs.get(run_id)
    outcome = parts.train(run_id, "w1")
    assert outcome.outcome == "succeeded", outcome.error
    headers = as_("registry:read")
    files = client.get(f"/v1/adapters/{outcome.adapter_id}/files", headers=headers).json()
    assert {"adapter_config.json", "adapter_model.safetensors"} == {f["path"] for f in files["files"]}
    one = client.get(f"/v1/adapters/{outcome.adapter_id}/files/adapter_config.json", headers=headers)
    assert hashlib.sha256(one.content).hexdigest() == one.headers["x-content-sha256"]
    assert json.loads(one.content)["base_model_name_or_path"] == files["base_model"]["name"] == "tiny"
    assert client.get(f"/v1/adapters/{outcome.adapter_id}/files/../../etc/passwd",
                      headers=headers).status_code == 404

    tar = client.get(f"/v1/adapters/{outcome.adapter_id}/artifact", headers=headers)
    assert tar.status_code == 200 and tar.headers["content-type"] == "application/x-tar"
    assert hashlib.sha256(tar.content).hexdigest() == tar.headers["x-content-sha256"]
    assert tar.headers["x-artifact-sha256"] == files["artifact_sha256"]
    again = client.get(f"/v1/adapters/{outcome.adapter_id}/artifact", headers=headers)
    assert again.headers["x-content-sha256"] == tar.headers["x-content-sha256"]  # byte-stable
    assert client.get(f"/v1/adapters/{outcome.adapter_id}/artifact").status_code == 401

    adapter_dir = unpack_tar(tar.content, tmp_path / "download")
    monkeypatch.chdir(tmp_path)  # where a directory named as the config names the base lies
    model = AutoPeftModelForCausalLM.from_pretrained(str(adapter_dir), local_files_only=True)
    assert any("lora_" in name for name, _ in model.named_parameters())
