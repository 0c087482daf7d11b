"""The training handler every delivery of a training task calls: ``run_training``.

It is idempotent and safe to run again at any point: a finished run is left alone, a
run another live worker holds is left to it, and everything before the final
transaction (rebuilding the examples, training, gating, storing the artifact under its
content address) can be repeated with the same result. The final transaction registers
the version, links its contract versions, marks the run succeeded and (auto-promotion)
moves the alias, or does none of it.
"""

from __future__ import annotations

import logging
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainer import datasets, heldout
from trainer.aliases import move_in
from trainer.manifest import HELD_OUT, TRAIN
from trainer.ml.digest import weights_sha256
from trainer.model import CANDIDATE, PROMOTED, REJECTED, AdapterVersion, Invalid, TrainingRun
from trainer.policy import GatePolicy
from trainer.registry import register_in
from trainer.runs import LeaseLost
from trainer.writes import lock_registry

if TYPE_CHECKING:
    from trainer.service import TrainerParts

log = logging.getLogger(__name__)
LOSS_CURVE_POINTS = 50
PROGRESS_EVERY = 0.5  # seconds between progress writes


@dataclass(frozen=True)
class RunnerConfig:
    lease_seconds: float = 60.0
    max_attempts: int = 3
    device: str | None = None


@dataclass(frozen=True)
class RunOutcome:
    outcome: str  # succeeded | done | busy | failed | gave_up | lost
    run_id: str
    adapter_id: str | None = None
    retry_in: float = 0.0
    error: str | None = None


class _Lease:
    """Renews the run's lease from a thread while training runs; records progress."""

    def __init__(self, parts: TrainerParts, run_id: str, owner: str, seconds: float) -> None:
        self.parts, self.run_id, self.owner, self.seconds = parts, run_id, owner, seconds
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._last_progress = 0.0
        self._thread = threading.Thread(target=self._renew, name=f"lease-{run_id}", daemon=True)

    def __enter__(self) -> _Lease:
        self._thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._stop.set()
        self._thread.join()

    def _renew(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            self._beat()

    def _beat(self, step: int | None = None, loss: float | None = None) -> None:
        try:
            if not self.parts.runs.heartbeat(self.run_id, self.owner, self.seconds, step, loss):
                self.lost.set()
        except Exception:  # a database blip must not kill training; the lease may expire
            log.exception("lease renewal of run %s failed", self.run_id)

    def progress(self, step: int, total: int, loss: float) -> None:
        if self.lost.is_set():
            raise LeaseLost(f"run {self.run_id} was taken over; stopping at step {step}")
        now = time.monotonic()
        # At most a few writes a second: a tiny model takes milliseconds a step.
        if step == 1 or step == total or now - self._last_progress >= PROGRESS_EVERY:
            self._last_progress = now
            self._beat(step, loss)


def run_training(parts: TrainerParts, run_id: str, worker: str,
                 config: RunnerConfig | None = None) -> RunOutcome:
    """Claim the run, train, gate and register; never raises for a failed run."""
    config = config or RunnerConfig()
    claim = parts.runs.claim(run_id, worker, config.lease_seconds, config.max_attempts)
    if claim.outcome != "claimed":
        return RunOutcome(claim.outcome, run_id, claim.run.adapter_id, claim.retry_in,
                          claim.run.error)
    try:
        with _Lease(parts, run_id, worker, config.lease_seconds) as lease:
            adapter = _train_and_register(parts, claim.run, worker, lease, config)
    except LeaseLost as exc:
        log.warning("%s", exc)
        return RunOutcome("lost", run_id, error=str(exc))
    except Exception as exc:  # the run failed: say why, in the run and in the log
        log.exception("training run %s failed", run_id)
        reason = f"{type(exc).__name__}: {exc}"
        parts.runs.fail(run_id, reason, owner=worker)
        return RunOutcome("failed", run_id, error=reason)
    return RunOutcome("succeeded", run_id, adapter.adapter_id)


def _train_and_register(parts: TrainerParts, run: TrainingRun, worker: str, lease: _Lease,
                        config: RunnerConfig) -> AdapterVersion:
    from trainer.ml.lora import HyperParams, train_successor

    base = parts.registry.base_model(run.base_model)
    if weights_sha256(base.path) != base.weights_sha256:
        raise Invalid(f"base model '{base.name}' at {base.path} no longer has the registered weights")
    parent_dir, parent_sha = _parent(parts, run)
    with parts.engine.connect() as conn:
        manifest = datasets.rebuild(conn, run.manifest_id)
    train = [ex.training_example() for ex in manifest.split_examples(TRAIN)]
    if not train:
        raise Invalid(f"manifest {run.manifest_id} has no train-split example")
    gate_policy, held_out = GatePolicy.model_validate(run.gate), manifest.split_examples(HELD_OUT)
    cases = heldout.prepare(parts, held_out, gate_policy)
    fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in run.hyper.items()}
    hyper = HyperParams(**fields)
    with tempfile.TemporaryDirectory(prefix=f"hcp-run-{run.run_id[:8]}-") as tmp:
        out = Path(tmp) / "adapter"
        result = train_successor(base.path, parent_dir, train, hyper, out,
                                 device=config.device, on_step=lease.progress)
        gate = heldout.gate_successor(heldout.GateInputs(
            base.path, out, parent_dir, held_out, hyper.max_len, config.device, cases), gate_policy)
        ref = parts.artifacts.put_dir(out)
    promote = bool(gate["promote"])
    status = REJECTED if not promote else (PROMOTED if run.gate.get("auto_promote") else CANDIDATE)
    metrics: dict[str, Any] = _finite({
        "training": {k: v for k, v in result.summary().items() if k != "adapter_dir"},
        "loss_curve": _downsample(list(result.losses), LOSS_CURVE_POINTS),
        "gate": gate,
        "initialised_from": {"adapter_id": run.parent_adapter_id, "artifact_sha256": parent_sha},
        "dataset": {"manifest_id": run.manifest_id, "content_hash": manifest.content_hash,
                    "examples_sha256": manifest.examples_sha256, **manifest.split},
        "artifact_size": ref.size,
    })
    return register_result(parts, run, worker, list(manifest.contract_versions), metrics,
                           ref.sha256, ref.uri, status)


def _parent(parts: TrainerParts, run: TrainingRun) -> tuple[Path | None, str | None]:
    if run.parent_adapter_id is None:
        return None, None
    parent = parts.registry.adapter(run.parent_adapter_id)
    # open_dir re-hashes the files: a parent whose bytes changed is refused here.
    return parts.artifacts.open_dir(parent.artifact_sha256), parent.artifact_sha256


def register_result(parts: TrainerParts, run: TrainingRun, worker: str,
                    contracts: list[dict[str, Any]], metrics: dict[str, Any], sha: str, uri: str,
                    status: str) -> AdapterVersion:
    """The run's final transaction: all of it (version, contract links, run succeeded,
    events, the alias move of an auto-promotion) or, if ``worker`` lost the lease, none."""
    with parts.engine.begin() as conn:
        lock_registry(conn)
        current = parts.runs.reload_in(conn, run.run_id)
        if current.status != "running" or current.lease_owner != worker:
            raise LeaseLost(f"run {run.run_id} is {current.status} under {current.lease_owner}")
        adapter = register_in(conn, parts.store, run, contracts, metrics, sha, uri, status, worker)
        parts.runs.succeed_in(conn, run.run_id, worker, adapter.adapter_id, {
            "status": status, "artifact_sha256": sha, "gate_reason": metrics["gate"]["reason"],
        })
        if status == PROMOTED:
            alias = str(run.gate.get("alias", "production"))
            move_in(conn, parts.store, run.specialist, alias, adapter.adapter_id, worker,
                    f"auto-promoted by run {run.run_id}: {metrics['gate']['reason']}")
    return adapter


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
