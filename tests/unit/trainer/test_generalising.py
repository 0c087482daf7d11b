"""Training that keeps what it was not trained on: a fresh start from the base each
generation (ReST-EM), a KL anchor to the base, checkpoints chosen on a validation split,
and the KL from the base every run records."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")

from tests.unit.trainer.conftest import toy_examples  # noqa: E402
from trainer.ml.checkpoints import checkpoint_steps, split_validation  # noqa: E402
from trainer.ml.data import TrainingExample  # noqa: E402
from trainer.ml.lora import HyperParams, train_successor  # noqa: E402
from trainer.registry.artifacts import dir_sha256  # noqa: E402

pytestmark = pytest.mark.train

FAST = HyperParams(steps=6, learning_rate=2e-2, min_reward=0.5, batch_size=4)


def test_init_base_trains_from_a_fresh_lora_whatever_the_parent(
        tmp_path: Path, tiny_base: Path, root_adapter: Path) -> None:
    fresh = HyperParams(**{**FAST.__dict__, "init": "base"})
    from_base = train_successor(tiny_base, root_adapter, toy_examples(), fresh, tmp_path / "a")
    as_root = train_successor(tiny_base, None, toy_examples(), fresh, tmp_path / "b")
    continued = train_successor(tiny_base, root_adapter, toy_examples(), FAST, tmp_path / "c")

    assert dir_sha256(from_base.adapter_dir) == dir_sha256(as_root.adapter_dir)
    assert dir_sha256(continued.adapter_dir) != dir_sha256(from_base.adapter_dir)
    assert from_base.init == "base" and continued.init == "parent"


def test_every_run_records_its_kl_from_the_base_and_the_anchor_keeps_it_smaller(
        tmp_path: Path, tiny_base: Path) -> None:
    untrained = train_successor(tiny_base, None, toy_examples(), HyperParams(steps=0, min_reward=0.5),
                                tmp_path / "zero")
    free = train_successor(tiny_base, None, toy_examples(), FAST, tmp_path / "free")
    anchored = train_successor(tiny_base, None, toy_examples(),
                               HyperParams(**{**FAST.__dict__, "kl_weight": 5.0}), tmp_path / "kl")

    assert untrained.kl_from_base["reverse"] == pytest.approx(0.0, abs=1e-6)
    assert free.kl_from_base["tokens"] > 0 and free.kl_from_base["reverse"] > 0
    assert free.kl_from_base["forward"] > 0
    assert 0 < anchored.kl_from_base["reverse"] < free.kl_from_base["reverse"]


def test_the_validation_split_holds_out_whole_prompts_the_same_way_every_time() -> None:
    examples = toy_examples()
    fit, held = split_validation(examples, 0.25, seed=3)

    assert held and fit and len(fit) + len(held) == len(examples)
    assert not {e.prompt for e in fit} & {e.prompt for e in held}
    again = split_validation(list(reversed(examples)), 0.25, seed=3)[1]
    assert {e.prompt for e in again} == {e.prompt for e in held}
    assert split_validation(examples, 0.0, seed=3) == (examples, [])
    one = [TrainingExample("p", "a", 1.0, 1.0, "s1"), TrainingExample("p", "b", 1.0, 1.0, "s2")]
    assert split_validation(one, 0.5, seed=0) == (one, [])


def test_the_kept_checkpoint_is_the_one_best_on_the_validation_prompts(
        tmp_path: Path, tiny_base: Path) -> None:
    many = [TrainingExample(f"Say {w}.", w, 1.0, 1.0, f"s{i}")
            for i, w in enumerate(["red", "blue", "green", "gold", "pink", "grey", "teal", "navy"])]
    hyper = HyperParams(steps=12, learning_rate=5e-2, batch_size=2, validation_fraction=0.25,
                        checkpoints=4)
    result = train_successor(tiny_base, None, many, hyper, tmp_path / "ckpt")

    chosen = result.checkpoint
    assert chosen["validation_prompts"] == 2 and chosen["steps"] == [3, 6, 9, 12]
    best = min(range(4), key=lambda i: chosen["validation_loss"][i])
    assert chosen["kept_step"] == chosen["steps"][best]
    assert result.examples_used == 6  # the validation prompts' answers took no step
    assert checkpoint_steps(10, 3) == [3, 7, 10] and checkpoint_steps(2, 4) == [1, 2]
