"""Pytest fixtures shared by the registry and training tests (imported by those modules)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from trainer.registry.model import CANDIDATE, AdapterStatus, AdapterVersion, NewAdapter
from trainer.runs.selection import Selection


class RecordingDispatcher:
    """Remembers what would have been sent to a worker; sends nothing."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def dispatch(self, run_id: str) -> None:
        self.sent.append(run_id)


def make_container(url: str, data_dir: Path, dispatcher: Any = None) -> Container:
    # Models are confined to HCP_MODELS_DIR; the tests build theirs in pytest's temporary
    # directories (this test's and the session's tiny model), all under data_dir's parent.
    settings = Settings(database_url=url, data_dir=data_dir, redis_url="", kafka_bootstrap="",
                        models_dir=data_dir.parent)
    return Container(settings=settings, engine=make_engine(url), dispatch_to=dispatcher)


@pytest.fixture
def recorder() -> RecordingDispatcher:
    return RecordingDispatcher()


@pytest.fixture
def container(database_url: str, tmp_path: Path, recorder: RecordingDispatcher) -> Iterator[Container]:
    """The composition root on a fresh database; runs are recorded, not trained."""
    c = make_container(database_url, tmp_path, recorder)
    yield c
    c.close()


@pytest.fixture
def parts(container: Container) -> Container:
    return container


def fake_model_dir(root: Path, weights: bytes = b"weights-v1") -> Path:
    """A directory that registers as a base model (no real tensors inside)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text(json.dumps({"model_type": "fake", "hidden_size": 8}))
    (root / "model.safetensors").write_bytes(weights)
    return root


def fake_train(parts: Container, run_id: str, worker: str = "worker-1",
               status: AdapterStatus = CANDIDATE, content: bytes | None = None,
               metrics: dict[str, Any] | None = None,
               selection: Selection | None = None) -> AdapterVersion:
    """Claim a run and register a made-up artifact for it, the way the runner ends a run."""
    claim = parts.runs.claim(run_id, worker, 60, 3)
    assert claim.outcome == "claimed", claim
    run = claim.run
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "adapter_model.safetensors").write_bytes(content or run_id.encode())
        ref = parts.artifacts.put_dir(tmp)
    manifest = parts.manifests.rebuild(run.manifest_id)
    gate = {"promote": status != "rejected", "reason": "fake gate"}
    new = NewAdapter(
        specialist=run.specialist, parent_adapter_id=run.parent_adapter_id,
        base_model=run.base_model, training_run_id=run.run_id, manifest_id=run.manifest_id,
        hyper=run.hyper, metrics=metrics or {"gate": gate}, artifact_sha256=ref.sha256,
        artifact_uri=ref.uri, status=status,
        contract_versions=tuple((c["name"], c["version"]) for c in manifest.contract_versions))
    return parts.runner.registration.register(run, worker, new, "fake gate", selection)
