"""The adapter registry on SQLite and PostgreSQL: base models, triggers, lineage, aliases."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select, update
from sqlalchemy.exc import DatabaseError

from contract.policy import TriggerPolicy
from events.tables import events
from kernel.errors import Conflict, Invalid, NotFound
from tests.unit.trainer_core import fixtures
from tests.unit.trainer_core.factories import HOUSE_CONTRACT, seed_contract, seed_dataset, seed_reward
from tests.unit.trainer_core.fixtures import (
    RecordingDispatcher,
    fake_model_dir,
    fake_train,
    make_container,
)
from trainer.datasets.tables import dataset_manifests
from trainer.registry.model import PROMOTED, REJECTED, NewAdapter
from trainer.registry.tables import adapter_versions
from trainer.runs.store import LeaseLost
from trainer.runs.tables import training_runs as tr
from trainer.triggers.tables import trigger_firings

container, parts, recorder = fixtures.container, fixtures.parts, fixtures.recorder


def event_types(engine, stream_prefix: str = "") -> list[str]:
    with engine.connect() as conn:
        rows = conn.execute(select(events.c.type, events.c.stream_id).order_by(events.c.position))
        return [t for t, s in rows if s.startswith(stream_prefix)]


@pytest.fixture
def seeded(parts, tmp_path):
    """A base model, a published contract, 12 rewards for coding and a count policy of 4."""
    digest = seed_contract(parts.engine)
    seed_dataset(parts.engine, parts.store, "coding", contract=("default", 1, digest))
    parts.registry.register_base_model("tiny", fake_model_dir(tmp_path / "base"), "tester")
    parts.policies.configure("coding", TriggerPolicy(min_new_rewards=4), "tester")
    return digest


def test_base_model_is_registered_once_by_its_weight_hash(parts, tmp_path):
    path = fake_model_dir(tmp_path / "m")
    entry = parts.registry.register_base_model("tiny", path, "tester")
    assert len(entry.weights_sha256) == 64 and entry.config["model_type"] == "fake"
    assert parts.registry.register_base_model("tiny", path, "tester") == entry
    with pytest.raises(Conflict):
        parts.registry.register_base_model("tiny", fake_model_dir(tmp_path / "n", b"other"), "t")
    with pytest.raises(Invalid):
        parts.registry.register_base_model("empty", tmp_path / "nowhere", "tester")
    assert event_types(parts.engine, "base_model:") == ["base_model.registered"]


def test_default_specialists_are_seeded_and_new_ones_are_events(parts):
    assert {s.name for s in parts.registry.specialists()} >= {"chat", "agent", "coding", "genui"}
    parts.registry.create_specialist("math", "Arithmetic", "tester")
    assert parts.registry.specialist("math").created_by == "tester"
    assert "specialist.created" in event_types(parts.engine, "specialist:math")
    with pytest.raises(Conflict):
        parts.registry.create_specialist("math", "again", "tester")
    with pytest.raises(Invalid):
        parts.registry.create_specialist("Bad Name", "", "tester")


def test_a_trigger_fires_once_and_says_why(parts, seeded, recorder):
    results = {r.specialist: r for r in parts.triggers.evaluate()}
    fired = results["coding"].fired
    assert fired is not None and fired.created and fired.policy == "count"
    # 8 of the 12 seeded rewards are train split: held-out ones gate, they are not new data
    assert "8 new subjects with eligible rewards" in fired.reason and fired.parent_key == "root"
    assert fired.dataset_cut == 12
    assert results["chat"].fired is None
    assert recorder.sent == [fired.run_id]
    again = {r.specialist: r for r in parts.triggers.evaluate()}["coding"]
    # new data counts from the last run on the parent: nothing is new, nothing fires
    assert again.fired is None and "not due: 0 new subjects since the last run on root" in again.note
    manual = parts.triggers.fire_manual("coding", "tester", "by hand", parent="root")
    assert not manual.created and manual.run_id == fired.run_id
    assert recorder.sent == [fired.run_id]
    run = parts.runs.get(fired.run_id)
    assert run.status == "queued" and run.base_model == "tiny" and run.parent_adapter_id is None
    types = event_types(parts.engine)
    assert types.count("trigger.fired") == 1 and types.count("training.queued") == 1


def test_concurrent_trigger_processes_start_one_run(database_url, tmp_path, seeded, parts):
    evaluators = [make_container(database_url, tmp_path, RecordingDispatcher()) for _ in range(4)]
    barrier = threading.Barrier(len(evaluators))

    def evaluate(p):
        barrier.wait()
        p.triggers.evaluate()

    threads = [threading.Thread(target=evaluate, args=(p,)) for p in evaluators]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with parts.engine.connect() as conn:
        assert conn.execute(select(trigger_firings)).all().__len__() == 1
        assert len(conn.execute(select(tr)).all()) == 1
    assert sum(len(p.dispatcher.sent) for p in evaluators) == 1
    for p in evaluators:
        p.engine.dispose()


def test_registration_records_every_lineage_field(parts, seeded):
    firing = parts.triggers.fire_manual("coding", "tester", "first version")
    adapter = fake_train(parts, firing.run_id)
    assert adapter.adapter_id == "coding@1" and adapter.version == 1
    assert adapter.parent_adapter_id is None and adapter.base_model == "tiny"
    assert adapter.training_run_id == firing.run_id and adapter.status == "candidate"
    assert [(c.name, c.version, c.content_hash) for c in adapter.contract_versions] == [
        ("default", 1, seeded)]
    assert {"rank", "alpha", "target_modules", "learning_rate", "steps", "seed"} <= set(adapter.hyper)
    assert len(adapter.artifact_sha256) == 64 and adapter.artifact_uri.startswith("file://")
    run = parts.runs.get(firing.run_id)
    assert run.status == "succeeded" and run.adapter_id == "coding@1" and run.attempts == 1
    with parts.engine.connect() as conn:
        manifest = conn.execute(select(dataset_manifests)
                                .where(dataset_manifests.c.manifest_id == adapter.manifest_id)).one()
    assert len(manifest.reward_ids) == 12 and manifest.split == {"train": 8, "held_out": 4}
    assert len(manifest.subject_event_ids) == 12 and len(manifest.content_hash) == 64
    types = event_types(parts.engine)
    assert types.index("adapter.registered") < types.index("training.succeeded")


def test_successor_lineage_goes_back_to_the_root_and_is_verified(parts, seeded):
    root = fake_train(parts, parts.triggers.fire_manual("coding", "t", "root").run_id)
    parts.aliases.move("coding", "production", root.adapter_id, "tester", "first")
    for i in range(4):
        seed_reward(parts.engine, parts.store, "coding", f"q{i}", "a", 0.9,
                    contract=("default", 1, seeded))
    fired = {r.specialist: r for r in parts.triggers.evaluate()}["coding"].fired
    assert fired is not None and fired.parent_key == root.adapter_id and fired.dataset_cut == 16
    successor = fake_train(parts, fired.run_id)
    assert successor.parent_adapter_id == root.adapter_id
    chain = parts.lineage.chain(successor.adapter_id, deep=True)
    assert [link["adapter_id"] for link in chain] == ["coding@2", "coding@1"]
    assert all(link["verified"] for link in chain)
    assert chain[0]["manifest"]["reward_count"] == 16 and chain[1]["manifest"]["reward_count"] == 12
    assert chain[0]["contract_versions"][0]["content_hash"] == seeded
    assert chain[0]["base_model"]["verified"] is True

    stored = Path(parts.artifacts.open_dir(root.artifact_sha256)) / "adapter_model.safetensors"
    stored.chmod(0o644)
    stored.write_bytes(b"tampered")
    chain = parts.lineage.chain(successor.adapter_id)
    assert chain[0]["verified"] and not chain[1]["verified"]
    assert "now hashes to" in chain[1]["artifact"]["note"]


def test_alias_answers_for_any_time_and_rolls_back_by_moving(parts, seeded):
    v1 = fake_train(parts, parts.triggers.fire_manual("coding", "t", "a", parent="root").run_id)
    seed_reward(parts.engine, parts.store, "coding", "q", "a", 0.9, contract=("default", 1, seeded))
    v2 = fake_train(parts, parts.triggers.fire_manual("coding", "t", "b", parent="root").run_id)
    first = parts.aliases.move("coding", "production", v1.adapter_id, "alice", "launch")
    second = parts.aliases.move("coding", "production", v2.adapter_id, "bob", "better")
    assert second.previous_adapter_id == v1.adapter_id
    assert parts.aliases.at("coding", "production", first.moved_at - timedelta(seconds=1)) is None
    assert parts.aliases.at("coding", "production", first.moved_at).adapter_id == v1.adapter_id
    assert parts.aliases.at("coding", "production", second.moved_at).adapter_id == v2.adapter_id
    back = parts.aliases.rollback("coding", "production", "carol", "regression in the wild")
    assert back.adapter_id == v1.adapter_id and back.previous_adapter_id == v2.adapter_id
    assert parts.aliases.at("coding", "production", second.moved_at).adapter_id == v2.adapter_id
    assert [m.actor for m in parts.aliases.history("coding", "production")] == ["carol", "bob", "alice"]
    assert event_types(parts.engine).count("alias.moved") == 3
    with pytest.raises(Conflict):
        parts.aliases.move("coding", "production", v2.adapter_id, "x", "y", expected_current=v2.adapter_id)
    with pytest.raises(Invalid):
        parts.aliases.move("chat", "production", v2.adapter_id, "x", "wrong slot")
    with pytest.raises(NotFound):
        parts.aliases.move("coding", "staging", "coding@99", "x", "y")


def test_promote_and_reject_add_rows_and_the_registry_refuses_edits(parts, seeded):
    v1 = fake_train(parts, parts.triggers.fire_manual("coding", "t", "a").run_id)
    promoted = parts.registry.set_status(v1.adapter_id, PROMOTED, "alice", "looks good", "production")
    assert promoted.status == PROMOTED and promoted.registered_status == "candidate"
    assert parts.aliases.at("coding", "production").adapter_id == v1.adapter_id
    rejected = parts.registry.set_status(v1.adapter_id, REJECTED, "bob", "bad in prod")
    assert rejected.status == REJECTED
    with pytest.raises(Conflict):
        parts.registry.set_status(v1.adapter_id, REJECTED, "bob", "again")
    with pytest.raises(DatabaseError), parts.engine.begin() as conn:
        conn.execute(update(adapter_versions).values(status="promoted"))


def test_a_worker_that_lost_its_lease_registers_nothing(parts, seeded):
    run_id = parts.triggers.fire_manual("coding", "t", "a").run_id
    first = parts.runs.claim(run_id, "w1", 60, 3)
    assert first.outcome == "claimed"
    busy = parts.runs.claim(run_id, "w2", 60, 3)
    assert busy.outcome == "busy" and 0 < busy.retry_in <= 60
    with parts.engine.begin() as conn:  # w1 died: its lease runs out
        conn.execute(update(tr).where(tr.c.run_id == run_id)
                     .values(lease_until=first.run.started_at - timedelta(seconds=1)))
    assert [r.run_id for r in parts.runs.needing_dispatch(60)] == [run_id]
    second = parts.runs.claim(run_id, "w2", 60, 3)
    assert second.outcome == "claimed" and second.run.attempts == 2
    stale = NewAdapter("coding", None, "tiny", run_id, first.run.manifest_id, {}, (),
                       {"gate": {"reason": "x"}}, "a" * 64, "file:///x", "candidate")
    with pytest.raises(LeaseLost):
        parts.runner.registration.register(first.run, "w1", stale, "x")
    assert parts.registry.adapters("coding") == []
    assert parts.runs.get(run_id).lease_owner == "w2"
    assert "training.started" in event_types(parts.engine, f"training_run:{run_id}")


def test_a_run_that_keeps_losing_its_worker_is_marked_failed(parts, seeded):
    run_id = parts.triggers.fire_manual("coding", "t", "a").run_id
    claim = parts.runs.claim(run_id, "w1", 60, 1)
    with parts.engine.begin() as conn:
        conn.execute(update(tr).where(tr.c.run_id == run_id)
                     .values(lease_until=claim.run.started_at - timedelta(seconds=1)))
    gave_up = parts.runs.claim(run_id, "w2", 60, 1)
    assert gave_up.outcome == "gave_up" and gave_up.run.status == "failed"
    assert "gave up after 1 attempts" in gave_up.run.error
    assert parts.runs.claim(run_id, "w3", 60, 1).outcome == "failed"
    requeued = parts.runs.requeue(run_id, "tester", "try again")
    assert requeued.status == "queued" and requeued.attempts == 0
    assert event_types(parts.engine, f"training_run:{run_id}") == [
        "training.queued", "training.started", "training.failed", "training.requeued"]


def test_a_published_contract_supplies_the_policy_until_one_is_configured(parts):
    seed_contract(parts.engine, "house", 1, HOUSE_CONTRACT)
    coding, genui = parts.policies.effective("coding"), parts.policies.effective("genui")
    assert coding.source == "contract:house@1" and coding.rule.min_new_rewards == 3
    assert coding.contract == "house" and coding.gate.alias == "prod"
    assert genui.source == "none" and not genui.enabled
    parts.policies.configure("coding", TriggerPolicy(enabled=False), "tester")
    assert parts.policies.effective("coding").source == "api"


def test_the_production_adapters_falling_reward_fires_a_drift_run(parts, seeded):
    root = fake_train(parts, parts.triggers.fire_manual("coding", "t", "root").run_id)
    parts.aliases.move("coding", "production", root.adapter_id, "tester", "serve")
    parts.policies.configure("coding", TriggerPolicy(reward_floor={"threshold": 0.5, "window": 3}), "tester")
    for i in range(3):
        seed_reward(parts.engine, parts.store, "coding", f"served {i}", "meh", 0.2,
                    contract=("default", 1, seeded), adapter_version=root.adapter_id)
    fired = {r.specialist: r for r in parts.triggers.evaluate()}["coding"].fired
    assert fired is not None and fired.policy == "drift" and fired.parent_key == root.adapter_id
    assert "0.2000" in fired.reason and "below 0.5" in fired.reason


def test_a_run_can_register_only_one_version(parts, seeded):
    from sqlalchemy.exc import IntegrityError

    from trainer.registry.in_transaction import register_in

    run_id = parts.triggers.fire_manual("coding", "t", "a").run_id
    fake_train(parts, run_id)
    run = parts.runs.get(run_id)
    again = NewAdapter("coding", None, run.base_model, run_id, run.manifest_id, {}, (), {},
                       "b" * 64, "file:///b", "candidate")
    with pytest.raises(IntegrityError), parts.engine.begin() as conn:
        register_in(conn, parts.store, again, "w")
