"""The trigger and run commands as an operator types them (embedded SQLite)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hcp.bootstrap import Container
from hcp.settings import get_settings
from tests.integration.cli import hcp
from tests.unit.trainer_core.factories import HOUSE_CONTRACT, seed_contract, seed_dataset, seed_reward
from tests.unit.trainer_core.fixtures import RecordingDispatcher, fake_model_dir, fake_train, make_container


@pytest.fixture
def parts(sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Container]:
    monkeypatch.setenv("HCP_DATABASE_URL", sqlite_url)
    monkeypatch.setenv("HCP_KAFKA_BOOTSTRAP", "")
    monkeypatch.setenv("HCP_REDIS_URL", "")
    get_settings.cache_clear()
    built = make_container(sqlite_url, tmp_path, RecordingDispatcher())
    digest = seed_contract(built.engine, "house", 1, HOUSE_CONTRACT)
    seed_dataset(built.engine, built.store, "coding", contract=("house", 1, digest))
    built.registry.register_base_model("tiny", fake_model_dir(tmp_path / "base"), "tester")
    yield built
    built.close()
    get_settings.cache_clear()



def test_triggers_set_takes_the_contracts_toml_form_and_clear_returns_to_it(parts: Container) -> None:
    shown = hcp("triggers", "set", "coding", '{"reward_floor":{"threshold":0.5,"window":50}}')
    assert '"source": "api"' in shown and '"threshold": 0.5' in shown
    assert hcp("triggers", "set", "coding", '{"min_new_rewards": 0}', code=2)
    cleared = hcp("triggers", "clear", "coding", "--reason", "back to the contract")
    assert '"source": "contract:house@1"' in cleared
    assert "no API-set trigger policy" in hcp("triggers", "clear", "coding", code=4)


def test_the_run_list_and_status_show_the_gates_outcome(parts: Container) -> None:
    run_id = parts.triggers.fire_manual("coding", "t", "root").run_id
    fake_train(parts, run_id, status="rejected")
    status = json.loads(hcp("train", "status", run_id, "--json"))
    assert status["status"] == "succeeded" and status["gate_outcome"] == "rejected"
    assert f"run {run_id} (coding): succeeded (rejected)" in hcp("train", "status", run_id)
    followed = hcp("train", "status", run_id, "--follow")
    assert "registered coding@1; the gate rejected it" in followed
    assert "rejected" in hcp("train", "status")


def test_alias_rollback_twice_says_which_and_then_refuses(parts: Container) -> None:
    one = fake_train(parts, parts.triggers.fire_manual("coding", "t", "a", parent="root").run_id)
    digest = parts.contracts.get("house", 1).content_hash
    seed_reward(parts.engine, parts.store, "coding", "q", "a", 0.9, contract=("house", 1, digest))
    two = fake_train(parts, parts.triggers.fire_manual("coding", "t", "b", parent="root").run_id)
    hcp("alias", "set", "coding", "production", one.adapter_id, "--reason", "first")
    hcp("adapters", "promote", two.adapter_id, "--reason", "ship")
    first = " ".join(hcp("alias", "rollback", "coding", "production", "--reason", "regression").split())
    assert "back from coding@2 to coding@1; coding@2 is now rolled_back" in first
    second = " ".join(hcp("alias", "rollback", "coding", "production", "--reason", "again",
                          code=4).split())
    assert "no earlier target that was not itself rolled back from" in second
    assert hcp("alias", "at", "coding", "production").strip() == "coding@1"


def test_protected_alias_requests_need_another_person(parts: Container) -> None:
    one = fake_train(parts, parts.triggers.fire_manual("coding", "t", "a", parent="root").run_id)
    hcp("alias", "protect", "coding", "production", "--reason", "two people")
    refused = " ".join(hcp("alias", "set", "coding", "production", one.adapter_id, "--reason", "x",
                           code=4).split())
    assert "is protected" in refused
    asked = hcp("alias", "request", "coding", "production", one.adapter_id, "--reason", "ship")
    request_id = asked.split("request ")[-1].strip()
    assert "another key must approve it" in " ".join(hcp("alias", "approve", request_id,
                                                         code=2).split())
    parts.approvals.approve(request_id, "key:second", "looked at the gate")
    assert hcp("alias", "at", "coding", "production").strip() == one.adapter_id
