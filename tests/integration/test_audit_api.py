"""The audit over HTTP: scopes, checkpoints signed on demand, proofs an auditor checks
offline with the public key, adapter audits and audit jobs with their status."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from access.keys import create_key
from api.app import create_app
from audit.verify import ConsistencyBundle, InclusionBundle
from audit.verify import verify_consistency_bundle as consistent
from audit.verify import verify_inclusion_bundle as included
from tests.integration import audit_world
from tests.integration.audit_world import KEY, World
from tests.integration.superuser import as_superuser, sql

world = audit_world.world
Call = Callable[..., Any]


@pytest.fixture
def api(world: World) -> Iterator[tuple[TestClient, Callable[[str], dict[str, str]]]]:
    keys = {s: create_key(world.c.engine, [s]) for s in ("audit:read", "audit:write", "events:read")}
    with TestClient(create_app(world.c)) as client:
        yield client, lambda scope: {"Authorization": f"Bearer {keys[scope]}"}


def test_scopes_guard_the_audit_routes(api) -> None:
    client, as_ = api
    assert client.get("/v1/audit/checkpoints").status_code == 401
    assert client.get("/v1/audit/checkpoints", headers=as_("events:read")).status_code == 403
    assert client.post("/v1/audit/checkpoints", headers=as_("audit:read")).status_code == 403
    assert client.get("/v1/audit/adapters/coding@2", headers=as_("events:read")).status_code == 403


def test_checkpoints_and_proofs_verify_offline_with_the_public_key(api, world: World) -> None:
    client, as_ = api
    key = client.get("/v1/audit/key", headers=as_("audit:read")).json()
    assert key["vkey"] == KEY.verifier().vkey()
    first = client.get("/v1/audit/checkpoints/latest", headers=as_("audit:read")).json()
    event = world.c.store.read_all(0, 3)[2]
    audit_world.record_rewards(world.c, world.contract_hash, 2, "late")
    created = client.post("/v1/audit/checkpoints", headers=as_("audit:write"))
    assert created.status_code == 201, created.text
    second = created.json()
    assert second["tree_size"] == world.c.store.head() and second["position"] == first["position"] + 1

    proof = client.get(f"/v1/audit/proof/{event.event_id}", headers=as_("audit:read"))
    assert proof.status_code == 200, proof.text
    body = proof.json()
    assert body["position"] == 3 and body["checkpoint_position"] == second["position"]
    assert included(InclusionBundle.from_json(body), KEY.verifier()).size == second["tree_size"]
    older = client.get(f"/v1/audit/proof/{event.event_id}?checkpoint={first['position']}",
                       headers=as_("audit:read")).json()
    assert included(InclusionBundle.from_json(older), KEY.verifier()).size == first["tree_size"]

    consistency = client.get(f"/v1/audit/consistency?old={first['position']}", headers=as_("audit:read"))
    old, new = consistent(ConsistencyBundle.from_json(consistency.json()), KEY.verifier())
    assert (old.size, new.size) == (first["tree_size"], second["tree_size"])
    listed = client.get("/v1/audit/checkpoints", headers=as_("audit:read")).json()
    assert [c["position"] for c in listed] == [first["position"], second["position"]]


def test_bad_proof_requests_name_what_is_wrong(api) -> None:
    client, as_ = api
    bad = client.get("/v1/audit/proof/not-a-uuid", headers=as_("audit:read"))
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "path.event_id"
    assert client.get(f"/v1/audit/proof/{uuid.uuid4()}", headers=as_("audit:read")).status_code == 404
    missing = client.get("/v1/audit/consistency", headers=as_("audit:read"))
    assert missing.status_code == 422 and missing.json()["error"]["field"] == "query.old"
    assert client.get("/v1/audit/consistency?old=99", headers=as_("audit:read")).status_code == 404


def test_an_event_newer_than_every_checkpoint_is_not_yet_provable(api, world: World) -> None:
    client, as_ = api
    [late] = audit_world.record_rewards(world.c, world.contract_hash, 1, "late")
    event_id = late.event_ids[0]
    answer = client.get(f"/v1/audit/proof/{event_id}", headers=as_("audit:read"))
    assert answer.status_code == 409 and "sign a newer checkpoint" in answer.json()["error"]["message"]


def test_the_adapter_audit_names_a_forged_parent(api, world: World) -> None:
    client, as_ = api
    clean = client.get("/v1/audit/adapters/coding@2", headers=as_("audit:read"))
    assert clean.status_code == 200 and clean.json()["ok"] is True
    as_superuser(world.c.engine, sql("UPDATE adapter_versions SET parent_adapter_id = NULL "
                                     "WHERE adapter_id = 'coding@2'"))
    body = client.get("/v1/audit/adapters/coding@2", headers=as_("audit:read")).json()
    assert body["ok"] is False and body["mismatch_count"] == 1
    [mismatch] = [m for c in body["checks"] for m in c["mismatches"]]
    assert mismatch["check"] == "adapter_versions"
    assert mismatch["subject"] == "adapter_versions adapter_id=coding@2"
    assert "parent_adapter_id" in mismatch["message"]
    assert client.get("/v1/audit/adapters/coding@9", headers=as_("audit:read")).status_code == 404


def test_audit_all_runs_as_a_job_with_status(api) -> None:
    client, as_ = api
    refused = client.post("/v1/audit/runs", json={"scope": "adapter"}, headers=as_("audit:read"))
    assert refused.status_code == 422
    started = client.post("/v1/audit/runs", json={"scope": "all"}, headers=as_("audit:read"))
    assert started.status_code == 202 and started.json()["status"] == "running"
    job_id = started.json()["job_id"]
    deadline = time.monotonic() + 60
    status = f"/v1/audit/runs/{job_id}"
    while (job := client.get(status, headers=as_("audit:read")).json())["status"] == "running":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert job["status"] == "succeeded", job["error"]
    assert job["report"]["ok"] is True and job["progress"]["event_log"][0] == job["progress"]["event_log"][1]
    assert client.get(f"/v1/audit/runs/{uuid.uuid4()}", headers=as_("audit:read")).status_code == 404


def test_the_audit_since_the_latest_checkpoint_runs_as_a_job(api, world: World) -> None:
    client, as_ = api
    audit_world.record_rewards(world.c, world.contract_hash, 2, "later")
    body = {"scope": "all", "since_checkpoint": True, "sample": 5, "seed": "api-seed"}
    started = client.post("/v1/audit/runs", json=body, headers=as_("audit:read"))
    assert started.status_code == 202, started.text
    assert started.json()["scope"].startswith("all since checkpoint 1 (size ")
    deadline = time.monotonic() + 60
    while (job := client.get(f"/v1/audit/runs/{started.json()['job_id']}",
                             headers=as_("audit:read")).json())["status"] == "running":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert job["status"] == "succeeded", job["error"]
    assert job["report"]["ok"] is True, job["report"]
    assert job["report"]["coverage"]["kind"] == "incremental"
    assert job["report"]["coverage"]["seed"] == "api-seed" and job["report"]["coverage"]["sample"] == 5
    wrong = client.post("/v1/audit/runs", json={"scope": "adapter", "adapter_id": "coding@2",
                                                 "since_checkpoint": True}, headers=as_("audit:read"))
    assert wrong.status_code == 422
