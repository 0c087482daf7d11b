"""run_training, the handler of every task delivery, on in-memory fakes of its collaborators.

No database, no torch: the claim/lease/registration rules are what is tested here; the
SQL adapters have their own suite (tests/integration/test_registry.py) on both backends.
"""

from __future__ import annotations

import struct
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from inference.verify import verified_base
from kernel.errors import NotFound
from trainer.datasets.manifest import Manifest, ManifestExample
from trainer.gate.verdict import GateRecord
from trainer.registry.artifacts import ArtifactRef
from trainer.registry.model import AdapterVersion, BaseModelEntry, NewAdapter
from trainer.runs.model import Claim, LeaseLost, TrainingRun
from trainer.runs.runner import RunnerDeps, Trained, run_training

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def run(**changes: Any) -> TrainingRun:
    values: dict[str, Any] = dict(
        run_id="r1", specialist="coding", parent_adapter_id=None, base_model="base",
        manifest_id="m1", firing_id="f1", hyper={"steps": 2}, gate={"auto_promote": False},
        status="queued", step=0, total_steps=2, last_loss=None, error=None, attempts=0,
        lease_owner=None, lease_until=None, adapter_id=None, created_by="t", created_at=NOW,
        updated_at=NOW, started_at=None, finished_at=None)
    values.update(changes)
    return TrainingRun(**values)


class FakeRuns:
    def __init__(self, current: TrainingRun) -> None:
        self.current, self.failed, self.beats = current, [], 0

    def claim(self, run_id: str, owner: str, lease_seconds: float, max_attempts: int) -> Claim:
        if self.current.status in ("succeeded", "failed"):
            return Claim("done" if self.current.status == "succeeded" else "failed", self.current)
        if self.current.lease_owner not in (None, owner):
            return Claim("busy", self.current, retry_in=5.0)
        self.current = replace(self.current, status="running", lease_owner=owner, attempts=1)
        return Claim("claimed", self.current)

    def heartbeat(self, *args: Any, **kwargs: Any) -> bool:
        self.beats += 1
        return True

    def fail(self, run_id: str, reason: str, owner: str | None = None) -> bool:
        self.failed.append(reason)
        self.current = replace(self.current, status="failed", error=reason)
        return True


class FakeRegistry:
    base_dir, base_sha = "", ""  # set per test by the ``base_dir`` fixture

    def base_model(self, name: str) -> BaseModelEntry:
        if name != "base":
            raise NotFound(f"no base model '{name}'")
        return BaseModelEntry("base", self.base_dir, self.base_sha, {}, "t", NOW)

    def adapter(self, adapter_id: str) -> AdapterVersion:
        raise NotFound(adapter_id)

    def adapter_ids_of_artifact(self, sha256: str) -> list[str]:
        return []


class FakeArtifacts:
    def put_dir(self, src: Path) -> ArtifactRef:
        return ArtifactRef("a" * 64, "file:///a", 3)


class FakeManifests:
    def rebuild(self, manifest_id: str) -> Manifest:
        examples = (ManifestExample("w1", "s1", "train", "User: hi\nAssistant: ", "hello", 1.0),)
        return Manifest("coding", 0, 1, ("w1",), {"s1": []}, ({"name": "c", "version": 1, "hash": "h"},),
                        {"train": 1, "held_out": 0}, "e" * 64, examples)

    def leaks(self, manifest_id: str, parent: str | None, label: str) -> list[Any]:
        return []


class FakeGate:
    def __init__(self, promote: bool) -> None:
        self.promote = promote

    def prepare(self, held_out: Any, policy: Any) -> list[Any]:
        return []

    def judge(self, inputs: Any, policy: Any) -> GateRecord:
        return GateRecord(promote=self.promote, reason="fake verdict")


class FakeRegistration:
    def __init__(self, runs: FakeRuns, lose_lease: bool = False) -> None:
        self.runs, self.lose_lease, self.registered, self.selections = runs, lose_lease, [], []

    def register(self, run: TrainingRun, worker: str, new: NewAdapter, reason: str,
                 selection: Any = None) -> Any:
        if self.lose_lease:
            raise LeaseLost("taken over")
        self.registered.append(new)
        self.selections.append(selection)
        self.runs.current = replace(self.runs.current, status="succeeded", adapter_id="coding@1")
        return replace_adapter("coding@1")


def replace_adapter(adapter_id: str) -> Any:
    return type("Adapter", (), {"adapter_id": adapter_id})()


def train(base: str, parent: Path | None, examples: Any, hyper: dict[str, Any], out: Path,
          device: str | None, on_step: Any) -> Trained:
    out.mkdir(parents=True)
    header = b'{"__metadata__":{}}'  # a safetensors file with no tensors (the runner edits it)
    (out / "adapter_model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    for step in (1, 2):
        on_step(step, 2, 1.0 / step)
    return Trained({"steps": 2}, [1.0, 0.5], 64)


def broken_train(*args: Any) -> Trained:
    raise RuntimeError("out of memory")


@pytest.fixture(autouse=True)
def base_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A base model directory whose weights hash is the registered one."""
    from trainer.ml.digest import weights_sha256

    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "model.safetensors").write_bytes(b"base")
    monkeypatch.setattr(FakeRegistry, "base_dir", str(tmp_path / "base"), raising=False)
    monkeypatch.setattr(FakeRegistry, "base_sha", weights_sha256(tmp_path / "base"), raising=False)


def deps(runs: FakeRuns, promote: bool = True, lose_lease: bool = False,
         trainer: Any = train) -> tuple[RunnerDeps, FakeRegistration]:
    registration = FakeRegistration(runs, lose_lease)
    return RunnerDeps(runs=runs, registry=FakeRegistry(), artifacts=FakeArtifacts(),  # type: ignore[arg-type]
                      manifests=FakeManifests(), gate=FakeGate(promote),  # type: ignore[arg-type]
                      registration=registration, verify_base=verified_base,
                      train=trainer), registration  # type: ignore[arg-type]


def test_a_claimed_run_trains_gates_and_registers_once() -> None:
    runs = FakeRuns(run())
    d, registration = deps(runs, promote=True)
    outcome = run_training(d, "r1", "w1")
    assert (outcome.outcome, outcome.adapter_id) == ("succeeded", "coding@1")
    [new] = registration.registered
    assert new.status == "candidate" and new.contract_versions == (("c", 1),)
    assert new.metrics["loss_curve"] == [[1, 1.0], [2, 0.5]] and new.metrics["gate"]["promote"]
    assert runs.beats >= 2  # progress reached the run while it trained


def test_a_passing_gate_promotes_only_under_auto_promote_and_a_failing_one_rejects() -> None:
    d, registration = deps(FakeRuns(run(gate={"auto_promote": True})), promote=True)
    run_training(d, "r1", "w1")
    d2, rejected = deps(FakeRuns(run(gate={"auto_promote": True})), promote=False)
    run_training(d2, "r1", "w1")
    assert registration.registered[0].status == "promoted"
    assert rejected.registered[0].status == "rejected"


def test_a_failure_is_recorded_on_the_run_and_nothing_is_registered() -> None:
    runs = FakeRuns(run())
    d, registration = deps(runs, trainer=broken_train)
    outcome = run_training(d, "r1", "w1")
    assert outcome.outcome == "failed" and "out of memory" in (outcome.error or "")
    assert runs.failed == ["RuntimeError: out of memory"] and registration.registered == []


def test_a_worker_that_lost_its_lease_registers_nothing_and_fails_nothing() -> None:
    runs = FakeRuns(run())
    d, registration = deps(runs, lose_lease=True)
    outcome = run_training(d, "r1", "w1")
    assert outcome.outcome == "lost" and runs.failed == [] and registration.registered == []


def test_finished_or_held_runs_are_left_alone() -> None:
    done, held = FakeRuns(run(status="succeeded", adapter_id="coding@1")), FakeRuns(run(lease_owner="w2"))
    assert run_training(deps(done)[0], "r1", "w1").outcome == "done"
    busy = run_training(deps(held)[0], "r1", "w1")
    assert busy.outcome == "busy" and busy.retry_in == 5.0
