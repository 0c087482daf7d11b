"""The training handler every delivery of a training task calls: ``run_training``.

It is idempotent and safe to run again at any point: a finished run is left alone, a
run another live worker holds is left to it, and everything before the final
transaction (rebuilding the examples, training, gating, storing the artifact under its
content address) can be repeated with the same result. The final transaction
(``Registration``) registers the version, links its contract versions, marks the run
succeeded and (auto-promotion) moves the alias, or does none of it.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernel.errors import Invalid
from trainer.datasets.manifest import HELD_OUT, TRAIN, Manifest
from trainer.datasets.manifests import Manifests
from trainer.datasets.traffic import training_examples
from trainer.gate.heldout import Gate, GateInputs
from trainer.gate.policy import GatePolicy
from trainer.gate.verdict import GateRecord
from trainer.ml.data import TrainingExample
from trainer.ml.portable import make_portable
from trainer.registry.artifacts import ArtifactStore, dir_sha256
from trainer.registry.model import CANDIDATE, PROMOTED, REJECTED, AdapterStatus, NewAdapter
from trainer.registry.registry import Registry
from trainer.runs.duplicates import DuplicateArtifact, TrainedFrom, duplicate_reason
from trainer.runs.lease import Lease
from trainer.runs.model import LeaseLost, RunOutcome, TrainingRun
from trainer.runs.registration import Registration
from trainer.runs.selection import selection_of
from trainer.runs.store import Runs

log = logging.getLogger(__name__)
LOSS_CURVE_POINTS = 50
OnStep = Callable[[int, int, float], None]


@dataclass(frozen=True)
class RunnerConfig:
    lease_seconds: float = 60.0
    max_attempts: int = 3
    device: str | None = None


@dataclass(frozen=True)
class Trained:
    """What training produced in ``out_dir``: a summary and the loss of every step."""

    summary: dict[str, Any]
    losses: list[float]
    max_len: int  # the prompt+response length it trained with (the gate scores alike)


VerifyBase = Callable[[str, str, str], Path]
# (base dir, parent adapter dir or None, examples, hyper-parameters, out dir, device, on_step)
TrainAdapter = Callable[[str, Path | None, Sequence[TrainingExample], dict[str, Any], Path,
                         str | None, OnStep], Trained]


def train_lora(base_dir: str, parent_dir: Path | None, examples: Sequence[TrainingExample],
               hyper: dict[str, Any], out_dir: Path, device: str | None, on_step: OnStep) -> Trained:
    """The real thing: a LoRA successor with torch and peft (``trainer.ml.lora``)."""
    from trainer.ml.lora import HyperParams, train_successor
    from trainer.ml.memory import release_freed

    fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in hyper.items()}
    params = HyperParams(**fields)
    result = train_successor(base_dir, parent_dir, list(examples), params, out_dir,
                             device=device, on_step=on_step)
    release_freed()  # the trained model is gone: before the gate generates
    summary = {k: v for k, v in result.summary().items() if k != "adapter_dir"}
    return Trained(summary, list(result.losses), params.max_len)


@dataclass(frozen=True)
class RunnerDeps:
    runs: Runs
    registry: Registry
    artifacts: ArtifactStore
    manifests: Manifests
    gate: Gate
    registration: Registration
    # (name, path, weights digest) -> the verified directory, or raises: the one check every
    # base model load goes through (``inference.verify``, given by the composition root)
    verify_base: VerifyBase
    train: TrainAdapter = train_lora


def run_training(deps: RunnerDeps, run_id: str, worker: str,
                 config: RunnerConfig | None = None) -> RunOutcome:
    """Claim the run, train, gate and register; never raises for a failed run."""
    config = config or RunnerConfig()
    claim = deps.runs.claim(run_id, worker, config.lease_seconds, config.max_attempts)
    if claim.outcome != "claimed":
        return RunOutcome(claim.outcome, run_id, claim.run.adapter_id, claim.retry_in,
                          claim.run.error)
    try:
        with Lease(deps.runs, run_id, worker, config.lease_seconds) as lease:
            adapter_id = _train_and_register(deps, claim.run, worker, lease, config)
    except LeaseLost as exc:
        log.warning("%s", exc)
        return RunOutcome("lost", run_id, error=str(exc))
    except Exception as exc:  # the run failed: say why, in the run and in the log
        log.exception("training run %s failed", run_id)
        reason = f"{type(exc).__name__}: {exc}"
        deps.runs.fail(run_id, reason, owner=worker)
        return RunOutcome("failed", run_id, error=reason)
    return RunOutcome("succeeded", run_id, adapter_id)


def _train_and_register(deps: RunnerDeps, run: TrainingRun, worker: str, lease: Lease,
                        config: RunnerConfig) -> str:
    base = deps.registry.base_model(run.base_model)
    deps.verify_base(base.name, base.path, base.weights_sha256)  # refuses other weights
    parent_dir, parent_sha = _parent(deps, run)
    manifest = deps.manifests.rebuild(run.manifest_id)
    leaks = deps.manifests.leaks(run.manifest_id, run.parent_adapter_id, f"run {run.run_id[:8]}")
    if leaks:  # a gate that trained on its held-out set proves nothing
        raise Invalid("held-out leak: " + "; ".join(leak.text() for leak in leaks))
    train = [ex for _, ex in training_examples(manifest.split_examples(TRAIN), run.hyper)]
    if not train:
        raise Invalid(f"manifest {run.manifest_id} has no train-split example")
    policy, held_out = GatePolicy.model_validate(run.gate), manifest.split_examples(HELD_OUT)
    cases = deps.gate.prepare(held_out, policy)  # fails early if the gate cannot run
    with tempfile.TemporaryDirectory(prefix=f"hcp-run-{run.run_id[:8]}-") as tmp:
        out = Path(tmp) / "adapter"
        trained = deps.train(base.path, parent_dir, train, run.hyper, out, config.device,
                             lease.progress)
        make_portable(out, base.name, base.weights_sha256)  # the base by its registry name
        address = dir_sha256(out)
        _refuse_duplicate(deps, run, manifest, address)  # before the gate's time is spent
        parent = deps.registry.adapter(run.parent_adapter_id) if run.parent_adapter_id else None
        gate = deps.gate.judge(GateInputs(
            base.path, out, parent_dir, held_out, trained.max_len, config.device, cases,
            precision=str(run.hyper.get("precision", "auto")),
            parent_gate=GateRecord.of(parent.metrics.get("gate")) if parent else None,
            parent_ref=f"{parent.specialist}@{parent.version}" if parent else None,
            specialist=run.specialist, base_sha256=base.weights_sha256, base_name=base.name,
            successor_sha256=address, parent_sha256=parent_sha), policy)
        ref = deps.artifacts.put_dir(out)
    status: AdapterStatus = (REJECTED if not gate.promote
                             else PROMOTED if policy.auto_promote else CANDIDATE)
    metrics = _metrics(run, manifest, trained, gate, parent_sha, ref.size)
    new = NewAdapter(
        specialist=run.specialist, parent_adapter_id=run.parent_adapter_id,
        base_model=run.base_model, training_run_id=run.run_id, manifest_id=run.manifest_id,
        hyper=run.hyper, metrics=metrics, artifact_sha256=ref.sha256, artifact_uri=ref.uri,
        contract_versions=tuple((c["name"], c["version"]) for c in manifest.contract_versions),
        status=status)
    return deps.registration.register(run, worker, new, gate.reason,
                                      selection_of(manifest, run.hyper)).adapter_id


def _refuse_duplicate(deps: RunnerDeps, run: TrainingRun, manifest: Manifest, address: str) -> None:
    """Raises:
        DuplicateArtifact: a version of the specialist already has these weights.
    """
    for adapter_id in deps.registry.adapter_ids_of_artifact(address):
        other = deps.registry.adapter(adapter_id)
        if other.specialist != run.specialist:
            continue  # the same bytes may serve two specialists (e.g. an untrained root)
        theirs = TrainedFrom(other.parent_adapter_id,
                             (other.metrics.get("dataset") or {}).get("examples_sha256"), other.hyper)
        ours = TrainedFrom(run.parent_adapter_id, manifest.examples_sha256, run.hyper)
        raise DuplicateArtifact(duplicate_reason(address, adapter_id, ours, theirs))


def _parent(deps: RunnerDeps, run: TrainingRun) -> tuple[Path | None, str | None]:
    if run.parent_adapter_id is None:
        return None, None
    parent = deps.registry.adapter(run.parent_adapter_id)
    # open_dir re-hashes the files: a parent whose bytes changed is refused here.
    return deps.artifacts.open_dir(parent.artifact_sha256), parent.artifact_sha256


def _metrics(run: TrainingRun, manifest: Manifest, trained: Trained, gate: GateRecord,
             parent_sha: str | None, artifact_size: int) -> dict[str, Any]:
    return _finite({
        "training": trained.summary,
        "loss_curve": _downsample(trained.losses, LOSS_CURVE_POINTS),
        "gate": gate.to_json(),
        # a fresh LoRA on the base (init = "base", ReST-EM) starts from no adapter at all
        "initialised_from": ({"adapter_id": run.parent_adapter_id, "artifact_sha256": parent_sha}
                             if run.hyper.get("init", "parent") == "parent"
                             else {"adapter_id": None, "artifact_sha256": None, "init": "base"}),
        "dataset": {"manifest_id": run.manifest_id, "content_hash": manifest.content_hash,
                    "examples_sha256": manifest.examples_sha256, **manifest.split},
        "artifact_size": artifact_size,
    })


def _downsample(values: list[float], points: int) -> list[list[float]]:
    """[step, loss] pairs, at most ``points`` of them, always with the first and last."""
    if not values:
        return []
    if len(values) <= points:
        return [[i + 1, v] for i, v in enumerate(values)]
    stride = (len(values) - 1) / (points - 1)
    picks = sorted({round(i * stride) for i in range(points)})
    return [[i + 1, values[i]] for i in picks]


def _finite(data: Any) -> Any:
    """JSON has no NaN: replace non-finite floats with None, recursively."""
    if isinstance(data, float):
        return data if data == data and abs(data) != float("inf") else None
    if isinstance(data, dict):
        return {k: _finite(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_finite(v) for v in data]
    return data
