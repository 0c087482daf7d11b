"""Retraining triggers: new data counted since the last run (any outcome) in subjects under
the serving contract version, backoff after a rejection, forced re-runs, dropping an
API-set policy, and the gate's outcome on the run."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from sqlalchemy import func, select

from contract.policy import TriggerPolicy
from evaluators.tables import reward_records
from kernel.errors import Conflict, Invalid
from tests.unit.evaluators.factories import contract_text, publish
from tests.unit.trainer_core import fixtures
from tests.unit.trainer_core.factories import HOUSE_CONTRACT as HOUSE
from tests.unit.trainer_core.factories import seed_contract, seed_dataset, seed_reward
from tests.unit.trainer_core.fixtures import fake_model_dir, fake_train

container, parts, recorder = fixtures.container, fixtures.parts, fixtures.recorder


@pytest.fixture
def seeded(parts, tmp_path):
    """Base model, a published contract, 12 rewards for coding (8 train), count policy 4."""
    digest = seed_contract(parts.engine)
    seed_dataset(parts.engine, parts.store, "coding", contract=("default", 1, digest))
    parts.registry.register_base_model("tiny", fake_model_dir(tmp_path / "base"), "tester")
    parts.policies.configure("coding", TriggerPolicy(min_new_rewards=4), "tester")
    return digest


def more(parts, digest: str, n: int, adapter: str | None = None) -> None:
    for _ in range(n):
        seed_reward(parts.engine, parts.store, "coding", f"q {uuid.uuid4().hex}", "a", 0.9,
                    contract=("default", 1, digest), adapter_version=adapter)


def coding(parts):
    return {r.specialist: r for r in parts.triggers.evaluate()}["coding"]


def test_a_rejected_successor_does_not_make_the_same_data_fire_again(parts, seeded):
    root = fake_train(parts, parts.triggers.fire_manual("coding", "t", "root").run_id)
    parts.aliases.move("coding", "production", root.adapter_id, "t", "serve it")
    more(parts, seeded, 4)
    first = coding(parts).fired
    assert first is not None and first.parent_key == root.adapter_id
    fake_train(parts, first.run_id, status="rejected")
    more(parts, seeded, 1)  # one new session: before, 5 >= 4 since the parent fired again
    quiet = coding(parts)
    assert quiet.fired is None and "1 new subjects since the last run on coding@1" in quiet.note
    assert "backing off after 1 rejected run(s): x2 new data" in quiet.note
    more(parts, seeded, 6)  # 7 < 4 x 2
    assert coding(parts).fired is None
    more(parts, seeded, 1)
    again = coding(parts).fired
    assert again is not None and "threshold 8 after 1 rejected run(s)" in again.reason


def test_a_backoff_wait_holds_automatic_rules_after_a_rejection(parts, seeded):
    parts.policies.configure("coding", TriggerPolicy(min_new_rewards=4, backoff_factor=1.0,
                                                     backoff_wait="6h"), "tester")
    fired = coding(parts).fired
    fake_train(parts, fired.run_id, status="rejected")
    more(parts, seeded, 8)
    held = coding(parts)
    assert held.fired is None and "nothing fires before" in held.note
    # a person can still fire by hand
    assert parts.triggers.fire_manual("coding", "t", "by hand").created


def test_new_data_is_counted_in_subjects_under_the_serving_contract_version(parts, tmp_path):
    v1 = publish(parts.contracts, contract_text())
    v2 = publish(parts.contracts, contract_text(answered_weight=2.0), parent=1)
    parts.registry.register_base_model("tiny", fake_model_dir(tmp_path / "base"), "tester")
    parts.policies.configure("coding", TriggerPolicy(min_new_rewards=4, contract="default"), "t")
    subjects = [seed_reward(parts.engine, parts.store, "coding", f"q{i}", "a", 0.9,
                            contract=("default", 1, v1.content_hash)) for i in range(3)]
    for seeded in subjects:  # v2 scores the same subjects: 6 rewards, 3 subjects
        rescore(parts, seeded["stream"], ("default", 2, v2.content_hash))
    only_v2 = seed_reward(parts.engine, parts.store, "coding", "q3", "a", 0.9,
                          contract=("default", 2, v2.content_hash))
    assert only_v2 and parts.triggers.state("coding").new_eligible == 3  # served by v1
    assert coding(parts).fired is None
    parts.serving.move("default", "coding", 2, "t", "v2 serves coding")
    assert parts.triggers.state("coding").new_eligible == 4
    fired = coding(parts).fired
    assert fired is not None
    # a re-scoring of the same subjects by a new version is not new data
    v3 = publish(parts.contracts, contract_text(answered_weight=3.0), parent=2)
    parts.serving.move("default", "coding", 3, "t", "v3 serves coding")
    for seeded in [*subjects, only_v2]:
        rescore(parts, seeded["stream"], ("default", 3, v3.content_hash))
    assert parts.triggers.state("coding").new_eligible == 0


def rescore(parts, stream: str, contract: tuple[str, int, str]) -> None:
    with parts.engine.begin() as conn:
        row = conn.execute(select(reward_records).where(reward_records.c.stream_id == stream)).first()
        position = int(conn.execute(select(func.max(reward_records.c.position))).scalar() or 0) + 1
        values = {**row._mapping, "position": position, "reward_id": uuid.uuid4(),
                  "contract_name": contract[0], "contract_version": contract[1],
                  "contract_hash": contract[2], "created_at": datetime.now(UTC)}
        conn.execute(reward_records.insert().values(**values))


def test_the_same_work_trains_again_only_when_forced_with_a_reason(parts, seeded, recorder):
    first = parts.triggers.fire_manual("coding", "t", "first")
    assert not parts.triggers.fire_manual("coding", "t", "again").created
    with pytest.raises(Invalid, match="needs a reason"):
        parts.triggers.fire_manual("coding", "t", "", force=True)
    parts.policies.configure("coding", TriggerPolicy(min_new_rewards=4, gate_margin=0.05), "t")
    forced = parts.triggers.fire_manual("coding", "t", "new learning rate and margin", force=True,
                                        hyper={"learning_rate": 0.01})
    assert forced.created and forced.rerun == 1 and forced.policy == "forced"
    assert forced.run_id != first.run_id and forced.dataset_cut == first.dataset_cut
    run = parts.runs.get(forced.run_id)
    assert run.hyper["learning_rate"] == 0.01 and run.gate["margin"] == 0.05
    assert recorder.sent == [first.run_id, forced.run_id]
    event = next(e for e in parts.store.read_stream("specialist:coding", limit=1000)
                 if e.type == "trigger.fired" and e.payload["run_id"] == forced.run_id)
    assert event.payload["reason"] == "new learning rate and margin" and event.payload["rerun"] == 1
    adapter = fake_train(parts, forced.run_id)
    assert adapter.training_run_id == forced.run_id  # its own run, so its own lineage


def test_a_succeeded_run_shows_what_the_gate_made_of_it(parts, seeded):
    fired = parts.triggers.fire_manual("coding", "t", "root")
    fake_train(parts, fired.run_id, status="rejected")
    run = parts.runs.get(fired.run_id)
    assert (run.status, run.gate_outcome, run.outcome) == ("succeeded", "rejected",
                                                           "succeeded (rejected)")
    assert parts.runs.recent("coding")[0].to_json()["gate_outcome"] == "rejected"


def test_an_api_set_policy_can_be_dropped_for_the_contracts(parts):
    seed_contract(parts.engine, "house", 1, HOUSE)
    parts.policies.configure("coding", TriggerPolicy(min_new_rewards=99), "t")
    assert parts.policies.effective("coding").source == "api"
    back = parts.policies.clear("coding", "t", "use the contract's")
    assert back.source == "contract:house@1" and back.rule.min_new_rewards == 3
    with pytest.raises(Conflict, match="no API-set trigger policy"):
        parts.policies.clear("coding", "t")
    types = [e.type for e in parts.store.read_stream("specialist:coding", limit=100)]
    assert types[-2:] == ["trigger.configured", "trigger.cleared"]


def test_the_api_forces_a_re_run_and_drops_a_policy(parts, seeded):
    from fastapi.testclient import TestClient

    from access.keys import create_key
    from api.app import create_app

    client = TestClient(create_app(parts))
    train = {"Authorization": f"Bearer {create_key(parts.engine, ['train:write'], 'ops')}"}
    first = client.post("/v1/training-runs", json={"specialist": "coding"}, headers=train)
    same = client.post("/v1/training-runs", json={"specialist": "coding"}, headers=train)
    no_reason = client.post("/v1/training-runs", json={"specialist": "coding", "force": True},
                            headers=train)
    forced = client.post("/v1/training-runs", json={"specialist": "coding", "force": True,
                                                    "reason": "gate margin changed"}, headers=train)
    assert (first.status_code, same.status_code, no_reason.status_code) == (201, 200, 422)
    assert forced.status_code == 201 and forced.json()["firing"]["rerun"] == 1
    assert forced.json()["run"]["run_id"] != first.json()["run"]["run_id"]

    dropped = client.delete("/v1/triggers/coding", headers=train)
    assert dropped.status_code == 200 and dropped.json()["source"] == "none"
    assert client.delete("/v1/triggers/coding", headers=train).status_code == 409


def test_a_successor_since_its_parent_trains_on_new_subjects_not_on_rescored_history(parts, tmp_path):
    v1 = publish(parts.contracts, contract_text())
    parts.registry.register_base_model("tiny", fake_model_dir(tmp_path / "base"), "tester")
    parts.policies.configure("coding", TriggerPolicy(min_new_rewards=2, dataset="since_parent",
                                                     contract="default"), "t")
    old = [seed_reward(parts.engine, parts.store, "coding", f"old {i}", "a", 0.9,
                       split="held_out" if i < 2 else "train",
                       contract=("default", 1, v1.content_hash)) for i in range(6)]
    root = fake_train(parts, parts.triggers.fire_manual("coding", "t", "root").run_id)
    parts.aliases.move("coding", "production", root.adapter_id, "t", "serve it")
    v2 = publish(parts.contracts, contract_text(answered_weight=2.0), parent=1)
    for seeded in old:  # contract v2 re-scores all history, at new reward positions
        rescore(parts, seeded["stream"], ("default", 2, v2.content_hash))
    new = [seed_reward(parts.engine, parts.store, "coding", f"new {i}", "a", 0.9,
                       contract=("default", 2, v2.content_hash)) for i in range(2)]
    run = parts.runs.get(parts.triggers.fire_manual("coding", "t", "successor").run_id)
    manifest = parts.manifests.rebuild(run.manifest_id)
    by_split = {split: {ex.subject_id for ex in manifest.examples if ex.split == split}
                for split in ("train", "held_out")}
    assert by_split["train"] == {f"turn:{s['stream']}:2" for s in new}
    assert by_split["held_out"] == {f"turn:{s['stream']}:2" for s in old[:2]}
    # the gate judges held-out subjects by their newest rewards (v2's), not the v1 ones
    assert not {s["reward_id"] for s in old[:2]} & set(manifest.reward_ids)
