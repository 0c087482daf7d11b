"""Pytest fixtures shared by the registry and training tests (imported by those modules)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hcp.bootstrap import Container
from hcp.db import make_engine
from hcp.settings import Settings
from trainer.model import CANDIDATE, AdapterVersion
from trainer.service import TrainerParts, build_parts, install_parts


class RecordingDispatcher:
    """Remembers what would have been sent to a worker; sends nothing."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def dispatch(self, run_id: str) -> None:
        self.sent.append(run_id)


def make_container(url: str, data_dir: Path) -> Container:
    settings = Settings(database_url=url, data_dir=data_dir, redis_url="", kafka_bootstrap="")
    return Container(settings=settings, engine=make_engine(url))


@pytest.fixture
def container(database_url: str, tmp_path: Path) -> Iterator[Container]:
    c = make_container(database_url, tmp_path)
    yield c
    c.close()


@pytest.fixture
def recorder() -> RecordingDispatcher:
    return RecordingDispatcher()


@pytest.fixture
def parts(container: Container, recorder: RecordingDispatcher) -> TrainerParts:
    p = build_parts(container, recorder)
    install_parts(container, p)
    return p


def fake_model_dir(root: Path, weights: bytes = b"weights-v1") -> Path:
    """A directory that registers as a base model (no real tensors inside)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text(json.dumps({"model_type": "fake", "hidden_size": 8}))
    (root / "model.safetensors").write_bytes(weights)
    return root


def fake_train(parts: TrainerParts, run_id: str, worker: str = "worker-1",
               status: str = CANDIDATE, content: bytes | None = None,
               metrics: dict[str, Any] | None = None) -> AdapterVersion:
    """Claim a run and register a made-up artifact for it, the way the runner ends a run."""
    from trainer import datasets
    from trainer.runner import register_result

    claim = parts.runs.claim(run_id, worker, 60, 3)
    assert claim.outcome == "claimed", claim
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "adapter_model.safetensors").write_bytes(content or run_id.encode())
        ref = parts.artifacts.put_dir(tmp)
    with parts.engine.connect() as conn:
        manifest = datasets.rebuild(conn, claim.run.manifest_id)
    gate = {"promote": status != "rejected", "reason": "fake gate"}
    return register_result(parts, claim.run, worker, list(manifest.contract_versions),
                           metrics or {"gate": gate}, ref.sha256, ref.uri, status)
