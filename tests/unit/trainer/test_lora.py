from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")

import torch  # noqa: E402
from safetensors.torch import load_file  # noqa: E402

from tests.unit.trainer.conftest import toy_examples  # noqa: E402
from trainer.ml.data import TrainingExample  # noqa: E402
from trainer.ml.lora import HyperParams, prepare_trainable_model, train_successor  # noqa: E402
from trainer.registry.artifacts import dir_sha256  # noqa: E402

pytestmark = pytest.mark.train

FAST = HyperParams(steps=3, learning_rate=1e-2, min_reward=0.5, batch_size=4)


def _adapter_tensors(adapter_dir: Path) -> dict[str, torch.Tensor]:
    return load_file(str(adapter_dir / "adapter_model.safetensors"))


def _trainable_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    from peft import get_peft_model_state_dict

    state = get_peft_model_state_dict(model, save_embedding_layers=False)
    return {k: v.detach().clone() for k, v in state.items()}


def test_successor_starts_from_the_parent_adapter(tiny_base: Path, root_adapter: Path) -> None:
    parent = _adapter_tensors(root_adapter)

    model = prepare_trainable_model(tiny_base, root_adapter, FAST, torch.device("cpu"))
    state = _trainable_state(model)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}

    assert state.keys() == parent.keys()
    assert all(torch.equal(state[k], parent[k]) for k in parent)
    assert any(not torch.equal(parent[k], torch.zeros_like(parent[k])) for k in parent)
    assert trainable and all("lora_" in n for n in trainable)


def test_successor_weights_move_away_from_the_parent_by_training(
    tmp_path: Path, tiny_base: Path, root_adapter: Path
) -> None:
    parent = _adapter_tensors(root_adapter)

    untouched = train_successor(
        tiny_base, root_adapter, toy_examples(), HyperParams(steps=0), tmp_path / "zero"
    )
    trained = train_successor(tiny_base, root_adapter, toy_examples(), FAST, tmp_path / "three")

    zero_steps = _adapter_tensors(untouched.adapter_dir)
    three_steps = _adapter_tensors(trained.adapter_dir)
    assert all(torch.equal(zero_steps[k], parent[k]) for k in parent)
    assert any(not torch.equal(three_steps[k], parent[k]) for k in parent)


def test_two_cpu_runs_give_byte_identical_adapters(tmp_path: Path, tiny_base: Path) -> None:
    first = train_successor(tiny_base, None, toy_examples(), FAST, tmp_path / "a", device="cpu")
    second = train_successor(tiny_base, None, toy_examples(), FAST, tmp_path / "b", device="cpu")
    reseeded = train_successor(
        tiny_base, None, toy_examples(), HyperParams(steps=3, learning_rate=1e-2, seed=9),
        tmp_path / "c", device="cpu",
    )

    assert dir_sha256(first.adapter_dir) == dir_sha256(second.adapter_dir)
    assert first.losses == second.losses
    assert dir_sha256(reseeded.adapter_dir) != dir_sha256(first.adapter_dir)


def test_loss_decreases_on_a_toy_dataset(tmp_path: Path, tiny_base: Path) -> None:
    hyper = HyperParams(steps=25, learning_rate=2e-2, min_reward=0.5, batch_size=4)
    calls: list[tuple[int, int, float]] = []

    result = train_successor(
        tiny_base, None, toy_examples(), hyper, tmp_path / "a",
        on_step=lambda step, total, loss: calls.append((step, total, loss)),
    )

    assert result.loss_last < result.loss_first - 0.5
    assert result.loss_min <= result.loss_last
    assert [c[0] for c in calls] == list(range(1, 26))
    assert [c[2] for c in calls] == list(result.losses)
    assert result.tokens_seen > 0 and result.tokens_per_s > 0


def test_examples_below_min_reward_are_not_trained_on(tmp_path: Path, tiny_base: Path) -> None:
    result = train_successor(tiny_base, None, toy_examples(), FAST, tmp_path / "a")

    assert (result.examples_used, result.examples_dropped) == (4, 4)
    low = [TrainingExample("p", "r", reward=0.1, weight=1.0, subject_id="s")]
    with pytest.raises(ValueError, match="min_reward"):
        train_successor(tiny_base, None, low, FAST, tmp_path / "b")


def test_refuses_a_non_empty_output_directory(tmp_path: Path, tiny_base: Path) -> None:
    (tmp_path / "stale.txt").write_text("left over")

    with pytest.raises(ValueError, match="not empty"):
        train_successor(tiny_base, None, toy_examples(), FAST, tmp_path)


def test_training_leaves_global_torch_state_alone(tmp_path: Path, tiny_base: Path) -> None:
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)

    train_successor(tiny_base, None, toy_examples(), FAST, tmp_path / "a")

    assert torch.equal(torch.rand(3), expected)
    assert not torch.are_deterministic_algorithms_enabled()
