from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.unit.trainer.conftest import TOY_FACTS, toy_examples
from trainer.ml.data import TrainingExample, preference_pairs


def _ex(prompt: str, response: str, reward: float, weight: float = 1.0) -> TrainingExample:
    return TrainingExample(prompt, response, reward, weight, subject_id=f"{prompt}-{response}")


def test_pairs_are_same_prompt_with_a_chosen_response_that_passes_min_reward() -> None:
    examples = [
        _ex("p", "best", 0.9), _ex("p", "ok", 0.6), _ex("p", "bad", 0.1, weight=2.0),
        _ex("q", "only", 1.0), _ex("r", "low", 0.3), _ex("r", "lower", 0.2),
    ]

    pairs = preference_pairs(examples, min_reward=0.5)

    assert [(c.response, r.response, pytest.approx(w)) for c, r, w in pairs] == [
        ("best", "bad", 1.6), ("best", "ok", 0.3), ("ok", "bad", 1.0),
    ]


@pytest.mark.train
def test_dpo_starts_at_log_2_from_the_parent_and_raises_the_margin(
    tmp_path: Path, tiny_base: Path, root_adapter: Path
) -> None:
    from trainer.ml.lora import HyperParams, train_successor
    from trainer.ml.metrics import heldout_metric

    hyper = HyperParams(objective="dpo", dpo_beta=0.5, steps=15, learning_rate=2e-2,
                        min_reward=0.5, batch_size=4)

    result = train_successor(tiny_base, root_adapter, toy_examples(), hyper, tmp_path / "a")

    # At step 1 the policy is the parent, which is also the reference.
    assert result.loss_first == pytest.approx(math.log(2), abs=1e-5)
    assert result.loss_last < result.loss_first
    assert (result.pairs_used, result.examples_used) == (len(TOY_FACTS), 2 * len(TOY_FACTS))
    parent = heldout_metric(tiny_base, root_adapter, toy_examples())
    successor = heldout_metric(tiny_base, result.adapter_dir, toy_examples())
    assert successor.heldout_margin > parent.heldout_margin + 0.5


@pytest.mark.train
def test_dpo_without_pairs_refuses(tmp_path: Path, tiny_base: Path) -> None:
    from trainer.ml.lora import HyperParams, train_successor

    unpaired = [_ex("p", "a", 1.0), _ex("q", "b", 0.0)]

    with pytest.raises(ValueError, match="no preference pair"):
        train_successor(tiny_base, None, unpaired, HyperParams(objective="dpo"), tmp_path / "a")
