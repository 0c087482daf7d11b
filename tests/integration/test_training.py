"""Training runs end to end in-process (tiny local model) on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from safetensors.torch import load_file

from tests.unit.trainer_core import fixtures
from tests.unit.trainer_core.factories import seed_contract, seed_dataset, seed_reward, tiny_base
from trainer.artifacts import ArtifactCorrupted
from trainer.dispatch import InProcessDispatcher
from trainer.loading import load_resolved
from trainer.policy import GatePolicy, TriggerPolicy

pytestmark = pytest.mark.train
container, parts, recorder = fixtures.container, fixtures.parts, fixtures.recorder
HYPER = {"steps": 6, "rank": 4, "alpha": 8, "learning_rate": 5e-3, "batch_size": 4, "max_len": 64}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return tiny_base(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture
def trainer(parts, tiny):
    """Registered tiny base, 12 rewards for coding, a count policy; runs train in this thread."""
    digest = seed_contract(parts.engine)
    seed_dataset(parts.engine, parts.store, "coding", contract=("default", 1, digest))
    parts.registry.register_base_model("tiny", tiny, "tester")
    parts.policies.configure("coding", TriggerPolicy(min_new_rewards=4, hyper=HYPER), "tester")
    return InProcessDispatcher(lambda: parts), digest


def adapter_tensors(parts, adapter) -> dict:
    return load_file(str(parts.artifacts.open_dir(adapter.artifact_sha256) / "adapter_model.safetensors"))


def test_a_fired_run_trains_gates_and_registers(parts, trainer):
    runner, digest = trainer
    fired = parts.triggers.evaluate()
    run_id = next(r.fired.run_id for r in fired if r.fired)
    outcome = runner.run_now(run_id)
    assert outcome.outcome == "succeeded", outcome.error
    run = parts.runs.get(run_id)
    assert run.status == "succeeded" and run.step == run.total_steps == 6 and run.last_loss > 0
    adapter = parts.registry.adapter(outcome.adapter_id)
    metrics = adapter.metrics
    assert len(metrics["loss_curve"]) == 6 and metrics["training"]["steps"] == 6
    gate = metrics["gate"]
    assert gate["parent_is_base"] and gate["held_out"] == 4 and "heldout_margin" in gate["comparison"]
    assert adapter.status == ("candidate" if gate["promote"] else "rejected")
    assert metrics["dataset"]["train"] == 8 and metrics["initialised_from"]["adapter_id"] is None
    assert [c.content_hash for c in adapter.contract_versions] == [digest]
    assert runner.run_now(run_id).outcome == "done"  # a redelivery is a no-op
    assert len(parts.registry.adapters("coding")) == 1


def test_a_successor_starts_from_its_parents_weights(parts, trainer):
    runner, digest = trainer
    parent = runner.run_now(parts.triggers.fire_manual("coding", "tester", "root").run_id)
    parts.aliases.move("coding", "production", parent.adapter_id, "tester", "serve it")
    for i in range(4):
        seed_reward(parts.engine, parts.store, "coding", f"more {i}", "Hello!", 1.0,
                    contract=("default", 1, digest))
    # Zero steps: what the successor is saved as is exactly what it started from.
    parts.policies.configure("coding", TriggerPolicy(min_new_rewards=4, hyper={**HYPER, "steps": 0},
                                                     gate=GatePolicy(auto_promote=True)), "tester")
    fired = next(r.fired for r in parts.triggers.evaluate() if r.fired)
    assert fired.parent_key == parent.adapter_id
    outcome = runner.run_now(fired.run_id)
    assert outcome.outcome == "succeeded", outcome.error
    child = parts.registry.adapter(outcome.adapter_id)
    assert child.parent_adapter_id == parent.adapter_id
    parent_version = parts.registry.adapter(parent.adapter_id)
    assert child.metrics["initialised_from"]["artifact_sha256"] == parent_version.artifact_sha256
    before, after = adapter_tensors(parts, parent_version), adapter_tensors(parts, child)
    assert before.keys() == after.keys()
    assert all(bool((before[k] == after[k]).all()) for k in before)
    assert any(bool(before[k].abs().sum() > 0) for k in before if "lora_B" in k)  # not a fresh init


def test_an_artifact_changed_on_disk_is_refused_and_its_successor_run_fails(parts, trainer):
    runner, digest = trainer
    first = runner.run_now(parts.triggers.fire_manual("coding", "tester", "root").run_id)
    parts.aliases.move("coding", "production", first.adapter_id, "tester", "serve it")
    assert load_resolved(parts, "coding").model is not None
    stored = parts.artifacts.open_dir(parts.registry.adapter(first.adapter_id).artifact_sha256)
    weights = stored / "adapter_model.safetensors"
    weights.chmod(0o644)
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(ArtifactCorrupted):
        load_resolved(parts, "coding")
    seed_reward(parts.engine, parts.store, "coding", "one more", "Hi", 1.0, contract=("default", 1, digest))
    outcome = runner.run_now(parts.triggers.fire_manual("coding", "tester", "successor").run_id)
    assert outcome.outcome == "failed" and "ArtifactCorrupted" in outcome.error
    assert parts.runs.get(outcome.run_id).error == outcome.error
    assert [a.adapter_id for a in parts.registry.adapters("coding")] == [first.adapter_id]
