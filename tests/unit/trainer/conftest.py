"""Fixtures for the trainer ML tests: one tiny base model and one root adapter per session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from trainer.ml.data import TrainingExample

# (prompt, rewarded response, unrewarded response): small enough to learn in a few steps.
TOY_FACTS = [
    ("Sky colour?", "blue", "green"),
    ("Grass colour?", "green", "blue"),
    ("2+2=", "4", "5"),
    ("Capital of France?", "Paris", "Rome"),
]


def toy_examples() -> list[TrainingExample]:
    examples = []
    for i, (prompt, good, bad) in enumerate(TOY_FACTS):
        examples.append(TrainingExample(prompt, good, reward=1.0, weight=1.0, subject_id=f"g{i}"))
        examples.append(TrainingExample(prompt, bad, reward=0.1, weight=1.0, subject_id=f"b{i}"))
    return examples


@pytest.fixture(scope="session")
def torch_single_thread() -> Iterator[None]:
    # Tiny matrices on two shared cores: one thread avoids OpenMP hand-off costs that
    # would otherwise make each step ten times slower.
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_base(tmp_path_factory: pytest.TempPathFactory, torch_single_thread: None) -> Path:
    pytest.importorskip("peft")
    from trainer.ml.tiny_model import build_tiny_base_model

    return build_tiny_base_model(tmp_path_factory.mktemp("base") / "tiny", seed=0)


@pytest.fixture(scope="session")
def root_adapter(tmp_path_factory: pytest.TempPathFactory, tiny_base: Path) -> Path:
    from trainer.ml.lora import HyperParams, train_successor

    out = tmp_path_factory.mktemp("root") / "adapter"
    hyper = HyperParams(steps=4, learning_rate=1e-2, min_reward=0.5, seed=1)
    train_successor(tiny_base, None, toy_examples(), hyper, out, device="cpu")
    return out
