"""Data the console's tests look at, made through the container's real services.

Synthetic harness traffic is recorded and scored under the example contract; training runs
are fired and registered with made-up artifacts (``fake_train``: no torch), so two
generations of ``coding`` exist, one promoted by hand; the contract is reweighted (v2,
published, history re-scored) and a further draft (v3) waits for its dry run. The gate
records carry an interval, a sample count and a seed, as a statistical gate will.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from events.ingest import Author, IngestLimits, ingest
from harness.synthetic import synthetic_sessions
from hcp.bootstrap import Container
from tests.unit.trainer_core.fixtures import fake_model_dir, fake_train
from trainer.registry.model import CANDIDATE, AdapterVersion, NewAdapter
from trainer.runs.selection import selection_of

ACTOR = "user:console-test"
EXAMPLE = Path(__file__).parents[2] / "examples" / "contracts" / "default.toml"


@dataclass(frozen=True)
class ConsoleData:
    root: str  # coding@1
    successor: str  # coding@2, trained from coding@1
    keys: dict[str, str]  # role -> API key


def gate_record(delta: float) -> dict[str, Any]:
    criterion = {"successor": 0.6 + delta, "parent": 0.6, "tolerance": 0.05, "gated": True, "ok": True}
    return {
        "promote": True, "reason": f"held-out margin improved by {delta}", "metric": "offline",
        "parent_is_base": False, "held_out": 12, "seed": 20240601,
        "interval": {"low": delta / 2, "high": delta * 1.5, "level": 0.95},
        "comparison": {"heldout_margin": {"successor": 0.2 + delta, "parent": 0.2, "delta": delta,
                                          "required": 0.0, "ok": True},
                       "n_pairs": 12, "criteria": {"brevity": criterion, "helpfulness": criterion}},
        "pass_rate": {"successor": 0.5, "parent": 0.25},
        "non_inferiority": {"margin": 0.05, "confidence": 0.95, "power": 0.8, "ok": True, "sets": {
            "general": probe_set(-0.0125), "unseen_templates": probe_set(0.0625),
            "retention": probe_set(0.0)}},
    }


def probe_set(delta: float) -> dict[str, Any]:
    """A non-inferiority row as trainer.gate.probes.judge_probes writes it (per case left out)."""
    return {"n": 8, "ok": True, "delta": delta, "mean": {"successor": 0.5 + delta, "parent": 0.5},
            "pass_rate": {"successor": 0.375, "parent": 0.25}, "power": 0.8, "pass_if_equal": 0.91,
            "interval": {"low": delta - 0.03, "high": delta + 0.03, "level": 0.95},
            "non_inferiority": {"lower": delta - 0.02, "level": 0.8, "margin": 0.05, "ok": True}}


def metrics(delta: float) -> dict[str, Any]:
    return {"gate": gate_record(delta), "loss_curve": [[1, 2.0], [2, 1.5], [3, 1.2], [4, 1.1]],
            "training": {"objective": "sft", "steps": 4, "loss_first": 2.0, "loss_last": 1.1}}


def record(container: Container, sessions: int, seed: int, adapters: dict[str, str]) -> None:
    limits = IngestLimits(500, 262_144)
    for session in synthetic_sessions(sessions, seed, adapters):
        ingest(container.store, session, limits, Author("harness:console-test"))
    container.evaluator(group="console-test").drain(timeout=120)


def train_recording_selection(container: Container, run_id: str, content: bytes,
                              measures: dict[str, Any]) -> AdapterVersion:
    """As ``fake_train``, and the run records the examples its selection picks (as the
    runner's does): the successor's page lists them; the root's says it has none."""
    run = container.runs.claim(run_id, "worker-1", 60, 3).run
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "adapter_model.safetensors").write_bytes(content)
        ref = container.artifacts.put_dir(tmp)
    manifest = container.manifests.rebuild(run.manifest_id)
    new = NewAdapter(
        specialist=run.specialist, parent_adapter_id=run.parent_adapter_id, base_model=run.base_model,
        training_run_id=run.run_id, manifest_id=run.manifest_id, hyper=run.hyper, metrics=measures,
        artifact_sha256=ref.sha256, artifact_uri=ref.uri, status=CANDIDATE,
        contract_versions=tuple((c["name"], c["version"]) for c in manifest.contract_versions))
    return container.runner.registration.register(run, "worker-1", new, "fake gate",
                                                  selection_of(manifest, run.hyper))


def build(container: Container, tmp: Path, sessions: int = 40) -> ConsoleData:
    container.registry.register_base_model("hcp-tiny", fake_model_dir(tmp / "models" / "base"), ACTOR)
    contracts = container.contracts
    contracts.create_draft("default", EXAMPLE.read_text(), ACTOR)
    contracts.publish("default", 1, ACTOR)
    record(container, sessions, seed=1, adapters={})
    root = container.triggers.fire_manual("coding", ACTOR, "first", parent="root")
    first = fake_train(container, root.run_id, content=b"coding-1", metrics=metrics(0.1))
    container.registry.set_status(first.adapter_id, "promoted", ACTOR, "reviewed by hand",
                                  alias="production")
    draft = contracts.draft_from("default", 1, ACTOR)
    reweighted = draft.document.replace('id = "brevity"\nweight = 1.0', 'id = "brevity"\nweight = 3.0')
    contracts.edit_draft("default", draft.version, reweighted, ACTOR)
    contracts.publish("default", draft.version, ACTOR)
    record(container, sessions, seed=2, adapters={"coding": first.adapter_id})
    again = container.triggers.fire_manual("coding", ACTOR, "second")
    second = train_recording_selection(container, again.run_id, b"coding-2", metrics(0.05))
    third = contracts.draft_from("default", 2, ACTOR)
    contracts.edit_draft("default", third.version, third.document.replace(
        'id = "brevity"\nweight = 3.0', 'id = "brevity"\nweight = 0.5'), ACTOR)
    keys = {
        "admin": container.keys.create(["admin"], "ops"),
        "auditor": container.keys.create(["registry:read", "contracts:read", "rewards:read",
                                          "events:read", "audit:read"], "auditor"),
        "viewer": container.keys.create(["registry:read"], "viewer"),
    }
    return ConsoleData(first.adapter_id, second.adapter_id, keys)
