"""Training runs end to end in-process (tiny local model) on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from safetensors.torch import load_file

from contract.policy import TriggerPolicy
from tests.integration.superuser import as_superuser, sql
from tests.unit.trainer_core import fixtures
from tests.unit.trainer_core.factories import (
    HOUSE_CONTRACT,
    seed_contract,
    seed_dataset,
    seed_reward,
    tiny_base,
)
from trainer.gate import rollout
from trainer.registry.artifacts import ArtifactCorrupted
from trainer.runs.dispatch import InProcessDispatcher

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
    return InProcessDispatcher(lambda run_id, worker: parts.train(run_id, worker)), digest


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
    # Which examples trained it is in the log, and the audit derives them again.
    [succeeded] = [e for e in parts.store.read_stream(f"training_run:{run_id}")
                   if e.type == "training.succeeded"]
    manifest = parts.manifests.row(adapter.manifest_id)
    assert sorted(succeeded.payload["examples"]) == sorted(
        m for m in manifest.reward_ids if parts.rewards.by_ids([m])[0].split == "train")
    audit = parts.auditor.everything()
    examples = next(c for c in audit.checks if c.name == "training_examples")
    assert examples.ok and examples.checked == 1, [m.line() for m in examples.mismatches]


def test_a_successor_starts_from_its_parents_weights(parts, trainer):
    runner, digest = trainer
    parent = runner.run_now(parts.triggers.fire_manual("coding", "tester", "root").run_id)
    parts.aliases.move("coding", "production", parent.adapter_id, "tester", "serve it")
    for i in range(4):
        seed_reward(parts.engine, parts.store, "coding", f"more {i}", "Hello!", 1.0,
                    contract=("default", 1, digest))
    # Zero steps: what the successor would be saved as is exactly what it started from,
    # byte for byte its parent's weights, so it is not registered as a version of its own.
    parts.policies.configure("coding", TriggerPolicy(min_new_rewards=4, hyper={**HYPER, "steps": 0},
                                                     auto_promote=True), "tester")
    fired = next(r.fired for r in parts.triggers.evaluate() if r.fired)
    assert fired.parent_key == parent.adapter_id
    outcome = runner.run_now(fired.run_id)
    assert outcome.outcome == "failed"
    assert f"byte-identical to its parent {parent.adapter_id}" in outcome.error
    before = adapter_tensors(parts, parts.registry.adapter(parent.adapter_id))
    assert any(bool(before[k].abs().sum() > 0) for k in before if "lora_B" in k)  # not a fresh init
    assert [a.adapter_id for a in parts.registry.adapters("coding")] == [parent.adapter_id]


def load(specialist: str, parts) -> None:
    """What the production alias points to, loaded into a fresh engine's pool."""
    from inference.embedded.engine import EmbeddedEngine

    target = parts.resolver.resolve(specialist).target()
    EmbeddedEngine(parts.artifacts.open_dir, "cpu").pool(target).ensure(target.adapter)


def test_an_artifact_changed_on_disk_is_refused_and_its_successor_run_fails(parts, trainer):
    runner, digest = trainer
    first = runner.run_now(parts.triggers.fire_manual("coding", "tester", "root").run_id)
    parts.aliases.move("coding", "production", first.adapter_id, "tester", "serve it")
    load("coding", parts)
    stored = parts.artifacts.open_dir(parts.registry.adapter(first.adapter_id).artifact_sha256)
    weights = stored / "adapter_model.safetensors"
    weights.chmod(0o644)
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(ArtifactCorrupted):
        load("coding", parts)  # a process that loads it now
    seed_reward(parts.engine, parts.store, "coding", "one more", "Hi", 1.0, contract=("default", 1, digest))
    outcome = runner.run_now(parts.triggers.fire_manual("coding", "tester", "successor").run_id)
    assert outcome.outcome == "failed" and "ArtifactCorrupted" in outcome.error
    assert parts.runs.get(outcome.run_id).error == outcome.error
    assert [a.adapter_id for a in parts.registry.adapters("coding")] == [first.adapter_id]


def test_a_forced_rerun_that_trains_the_same_weights_is_not_registered_again(parts, trainer):
    runner, _ = trainer
    first = runner.run_now(parts.triggers.fire_manual("coding", "tester", "root").run_id)
    parts.policies.configure("coding", TriggerPolicy(min_new_rewards=4, hyper=HYPER,
                                                     gate_margin=-0.5), "tester")
    forced = parts.triggers.fire_manual("coding", "tester", "a looser gate", force=True)
    outcome = runner.run_now(forced.run_id)
    assert outcome.outcome == "failed"
    assert f"byte-identical to {first.adapter_id}" in outcome.error
    assert "the same parent, the same training examples, the same hyper-parameters" in outcome.error
    assert [a.adapter_id for a in parts.registry.adapters("coding")] == [first.adapter_id]


def test_progress_counts_the_steps_the_run_plans(parts, trainer):
    runner, _ = trainer
    # epochs: the step count follows from the examples selected (8 train, batch 4: 2 an epoch)
    parts.policies.configure("coding", TriggerPolicy(
        min_new_rewards=4, hyper={**HYPER, "steps": 20, "epochs": 3}), "tester")
    fired = parts.triggers.fire_manual("coding", "tester", "epochs")
    assert parts.runs.get(fired.run_id).total_steps == 0  # not known before the worker plans
    assert runner.run_now(fired.run_id).outcome == "succeeded"
    run = parts.runs.get(fired.run_id)
    assert run.step == run.total_steps == 6


def test_a_run_that_would_train_on_what_a_gate_of_its_lineage_held_out_is_refused(parts, trainer):
    runner, digest = trainer
    parent = runner.run_now(parts.triggers.fire_manual("coding", "tester", "root").run_id)
    parts.aliases.move("coding", "production", parent.adapter_id, "tester", "serve it")
    new = [seed_reward(parts.engine, parts.store, "coding", f"more {i}", "Hello!", 1.0,
                       contract=("default", 1, digest)) for i in range(4)]
    fired = parts.triggers.fire_manual("coding", "tester", "successor")
    # history rewritten: the parent's gate now claims one of the new subjects was held out
    manifest_id = parts.registry.adapter(parent.adapter_id).manifest_id
    as_superuser(parts.engine, sql(
        "INSERT INTO manifest_members (manifest_id, reward_position, reward_id, subject_id, "
        "stream_id, split) VALUES (:m, :p, :r, :s, :t, 'held_out')", m=manifest_id,
        p=new[0]["position"], r=new[0]["reward_id"].replace("-", "") if parts.engine.dialect.name
        == "sqlite" else new[0]["reward_id"], s=f"turn:{new[0]['stream']}:2", t=new[0]["stream"]))
    outcome = runner.run_now(fired.run_id)
    assert outcome.outcome == "failed"
    assert f"held out by the gate of {parent.adapter_id}" in outcome.error
    assert [a.adapter_id for a in parts.registry.adapters("coding")] == [parent.adapter_id]


# The house contract judging the answer's text: 1 for an answer that starts with "Hello",
# and an evaluation error for the answer "boom".
LAST = "turns[size(turns) - 1].assistant_text"
ROLLOUT_CONTRACT = HOUSE_CONTRACT.replace(
    'expression = "1.0"',
    f'expression = "{LAST} == \'boom\' ? double(int({LAST})) : ({LAST}.startsWith(\'Hello\') ? 1.0 : 0.0)"')


@pytest.fixture
def rollout_trainer(parts, tiny):
    """The trainer fixture with rewards made under a contract that can judge new answers."""
    digest = seed_contract(parts.engine, "house", 1, ROLLOUT_CONTRACT)
    seed_dataset(parts.engine, parts.store, "coding", contract=("house", 1, digest))
    parts.registry.register_base_model("tiny", tiny, "tester")
    return InProcessDispatcher(lambda run_id, worker: parts.train(run_id, worker))


def rollout_outcome(parts, runner, **gate):
    parts.policies.configure("coding", TriggerPolicy(
        min_new_rewards=4, hyper=HYPER, gate_metric="rollout", **gate), "tester")
    return runner.run_now(parts.triggers.fire_manual("coding", "tester", "rollout gate").run_id)


def rollout_run(parts, runner, **gate) -> dict:
    outcome = rollout_outcome(parts, runner, **gate)
    assert outcome.outcome == "succeeded", outcome.error
    adapter = parts.registry.adapter(outcome.adapter_id)
    return {"status": adapter.status, **adapter.metrics["gate"]}


def test_the_rollout_gate_judges_generated_answers_with_the_contract(parts, rollout_trainer,
                                                                     monkeypatch):
    asked: list[tuple[bool, list[str]]] = []

    class Scripted:  # the successor answers politely; the bare base answers "boom"
        def __init__(self, target: rollout.RolloutTarget) -> None:
            self.successor = target.adapter_dir is not None

        def generate(self, prompts):
            asked.append((self.successor, list(prompts)))
            return ["Hello! Glad to help." if self.successor else "boom" for _ in prompts]

    gate_of = parts.runner.gate
    monkeypatch.setattr(gate_of, "harnesses", {**gate_of.harnesses, "scripted": Scripted})
    gate = rollout_run(parts, rollout_trainer, rollout_harness="scripted", rollout_prompts=3,
                       auto_promote=True, alias="prod")
    assert gate["metric"] == "rollout" and gate["promote"] and gate["status"] == "promoted"
    ours, theirs = gate["rollouts"]["successor"], gate["rollouts"]["parent"]
    assert (ours["mean_reward"], ours["n"], ours["errors"]) == (1.0, 3, 0)
    assert (theirs["mean_reward"], theirs["n"], theirs["errors"]) == (0.0, 3, 3)
    assert "criterion:quality" in theirs["error_samples"][0]
    interval = {"mean": 1.0, "low": 1.0, "high": 1.0, "level": 0.95, "n": 3, "resamples": 10_000,
                "seed": 0}  # paired statistics are recorded whatever test decides
    assert gate["comparison"]["rollout_reward"] == {"successor": 1.0, "parent": 0.0, "delta": 1.0,
                                                    "required": 0.0, "ok": True, "interval": interval}
    assert gate["test"] == "margin" and gate["samples"] == 3 and gate["sign_test"]["wins"] == 3
    # the latest 3 held-out subjects have 2 distinct prompts: each model answers each once
    assert [len(prompts) for _, prompts in asked] == [2, 2] and asked[0][1] == asked[1][1]
    assert gate["successor"]["rollout_reward"] == 1.0 and "heldout_margin" in gate["offline"]["comparison"]


def test_the_built_in_text_harness_gates_a_tiny_model_and_the_decision_follows_it(parts,
                                                                                 rollout_trainer):
    gate = rollout_run(parts, rollout_trainer, rollout_max_new_tokens=4)
    ours, theirs = gate["rollouts"]["successor"], gate["rollouts"]["parent"]
    assert ours["n"] == theirs["n"] == 4 and gate["rollouts"]["max_new_tokens"] == 4
    assert gate["parent_is_base"] and gate["rollouts"]["harness"] == "text"
    assert gate["promote"] == (ours["mean_reward"] - theirs["mean_reward"] > 0.0)
    assert gate["status"] == ("candidate" if gate["promote"] else "rejected")
    # random tiny models do not say "Hello": a tie, and a tie never promotes
    assert ours["mean_reward"] == theirs["mean_reward"] == 0.0 and not gate["promote"]


def test_a_rollout_gate_it_cannot_run_fails_the_run_before_training(parts, rollout_trainer):
    outcome = rollout_outcome(parts, rollout_trainer, rollout_harness="nowhere")
    assert outcome.outcome == "failed" and "no rollout harness 'nowhere'" in outcome.error
    assert not parts.runs.get(outcome.run_id).step and parts.registry.adapters("coding") == []
