"""Rollbacks that never re-deploy what they removed, and protected aliases that move only
with a second key's approval."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from access.keys import create_key
from api.app import create_app
from contract.policy import TriggerPolicy
from kernel.errors import Conflict, Invalid
from tests.unit.trainer_core import fixtures
from tests.unit.trainer_core.factories import seed_contract, seed_dataset, seed_reward
from tests.unit.trainer_core.fixtures import fake_model_dir, fake_train
from trainer.registry.aliases import AliasProtected

container, parts, recorder = fixtures.container, fixtures.parts, fixtures.recorder


@pytest.fixture
def versions(parts, tmp_path):
    """chat@1, chat@2, chat@3 (each a root on a little more data)."""
    digest = seed_contract(parts.engine)
    seed_dataset(parts.engine, parts.store, "chat", contract=("default", 1, digest))
    parts.registry.register_base_model("tiny", fake_model_dir(tmp_path / "base"), "tester")
    parts.policies.configure("chat", TriggerPolicy(min_new_rewards=4), "tester")
    made = []
    for i in range(3):
        made.append(fake_train(parts, parts.triggers.fire_manual("chat", "t", f"v{i}",
                                                                 parent="root").run_id).adapter_id)
        seed_reward(parts.engine, parts.store, "chat", f"q{i}", "a", 0.9, contract=("default", 1, digest))
    return made


def test_a_second_rollback_does_not_redeploy_the_rolled_back_version(parts, versions):
    one, two, _ = versions
    parts.aliases.move("chat", "production", one, "t", "first")
    parts.registry.set_status(two, "promoted", "t", "ship it", alias="production")
    back = parts.aliases.rollback("chat", "production", "t", "")
    assert (back.kind, back.adapter_id, back.previous_adapter_id) == ("rollback", one, two)
    assert back.reason == f"rollback from {two} to {one}"
    assert parts.registry.adapter(two).status == "rolled_back"
    with pytest.raises(Conflict, match="no earlier target that was not itself rolled back from"):
        parts.aliases.rollback("chat", "production", "t", "again")
    assert parts.aliases.at("chat", "production").adapter_id == one


def test_rollback_skips_what_was_rolled_back_unless_it_was_moved_to_again(parts, versions):
    one, two, three = versions
    for target in (one, two, three):
        parts.aliases.move("chat", "production", target, "t", "next")
    assert parts.aliases.rollback("chat", "production", "t", "").adapter_id == two
    assert parts.aliases.rollback("chat", "production", "t", "").adapter_id == one  # not 3
    parts.aliases.move("chat", "production", three, "t", "fixed after all")  # deliberate
    assert parts.aliases.rollback("chat", "production", "t", "").adapter_id == one  # 2: rolled back
    assert [m.kind for m in parts.aliases.history("chat", "production")][:2] == ["rollback", "move"]


def test_a_protected_alias_moves_only_with_another_keys_approval(parts, versions):
    one, two, _ = versions
    parts.aliases.move("chat", "production", one, "t", "first")
    client = TestClient(create_app(parts))
    keys = {label: {"Authorization": f"Bearer {create_key(parts.engine, scopes, label)}"}
            for label, scopes in (("alice", ["registry:write"]), ("bob", ["registry:write", "registry:read"]),
                                  ("root", ["admin"]))}
    url = "/v1/specialists/chat/aliases/production"
    body = {"protected": True, "reason": "production needs two people"}
    assert client.put(f"{url}/protection", json=body, headers=keys["alice"]).status_code == 403
    assert client.put(f"{url}/protection", json=body, headers=keys["root"]).json()["protected"]

    direct = client.put(url, json={"adapter_id": two, "reason": "now"}, headers=keys["alice"])
    assert direct.status_code == 409 and direct.json()["error"]["code"] == "alias_protected"
    promote = client.post(f"/v1/adapters/{two}/promote", json={"reason": "r"}, headers=keys["alice"])
    assert promote.status_code == 409 and parts.registry.adapter(two).status == "candidate"
    assert client.post(f"{url}/rollback", json={"reason": "r"}, headers=keys["alice"]).status_code == 409

    asked = client.post(f"{url}/requests", json={"adapter_id": two, "reason": "better"},
                        headers=keys["alice"])
    assert asked.status_code == 201 and asked.json()["expected_current"] == one
    request_id = asked.json()["request_id"]
    listed = client.get("/v1/alias-requests", headers=keys["bob"]).json()
    assert [r["request_id"] for r in listed] == [request_id]
    own = client.post(f"/v1/alias-requests/{request_id}/approve", json={}, headers=keys["alice"])
    assert own.status_code == 422 and "another key" in own.json()["error"]["message"]
    approved = client.post(f"/v1/alias-requests/{request_id}/approve", json={"reason": "ok"},
                           headers=keys["bob"])
    assert approved.status_code == 200 and approved.json()["actor"] == "key:bob"
    assert parts.aliases.at("chat", "production").adapter_id == two
    again = client.post(f"/v1/alias-requests/{request_id}/approve", json={}, headers=keys["bob"])
    assert again.status_code == 409
    types = [e.type for e in parts.store.read_stream("specialist:chat", limit=1000)]
    assert types[-4:] == ["alias.protection_changed", "alias.move_requested", "alias.move_approved",
                          "alias.moved"]


def test_the_gate_of_the_run_moves_an_auto_promoted_alias_under_its_policys_author(parts, versions):
    parts.policies.configure("chat", TriggerPolicy(min_new_rewards=1, auto_promote=True), "key:ops")
    run_id = parts.triggers.fire_manual("chat", "t", "successor").run_id
    promoted = fake_train(parts, run_id, status="promoted")
    move = parts.aliases.at("chat", "production")
    assert move.adapter_id == promoted.adapter_id and move.actor == f"gate:{run_id}"
    assert f"auto-promoted by the gate of run {run_id} (policy api, set by key:ops)" in move.reason


def test_a_protected_alias_holds_an_auto_promotion_and_a_rollback_for_approval(parts, versions):
    one, two, _ = versions
    parts.aliases.move("chat", "production", one, "t", "first")
    parts.approvals.protect("chat", "production", True, "admin", "two people")
    with pytest.raises(AliasProtected):
        parts.aliases.rollback("chat", "production", "t", "")
    parts.policies.configure("chat", TriggerPolicy(min_new_rewards=1, auto_promote=True), "t")
    run_id = parts.triggers.fire_manual("chat", "t", "successor").run_id
    held = fake_train(parts, run_id, status="promoted")
    assert held.status == "candidate" and parts.aliases.at("chat", "production").adapter_id == one
    [pending] = parts.approvals.pending("chat")
    assert pending.adapter_id == held.adapter_id and pending.requested_by == f"gate:{run_id}"
    parts.approvals.approve(pending.request_id, "operator", "reviewed the gate")
    assert parts.aliases.at("chat", "production").adapter_id == held.adapter_id

    asked = parts.approvals.request("chat", "production", None, "operator", "regression", rollback=True)
    assert asked.kind == "rollback" and asked.adapter_id == one
    with pytest.raises(Invalid):
        parts.approvals.approve(asked.request_id, "operator")
    move = parts.approvals.approve(asked.request_id, "second")
    assert (move.kind, move.adapter_id) == ("rollback", one)
    assert parts.registry.adapter(held.adapter_id).status == "rolled_back"
    assert two not in {r.adapter_id for r in parts.approvals.pending()}
