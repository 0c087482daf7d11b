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


@pytest.mark.train
def test_dpo_with_an_nll_term_keeps_the_chosen_answers_likely(
    tmp_path: Path, tiny_base: Path, root_adapter: Path
) -> None:
    from trainer.ml.lora import HyperParams, train_successor
    from trainer.ml.metrics import heldout_metric

    plain = HyperParams(objective="dpo", dpo_beta=0.5, steps=15, learning_rate=2e-2,
                        min_reward=0.5, batch_size=4)
    with_nll = HyperParams(**{**plain.__dict__, "dpo_nll_weight": 1.0})
    a = train_successor(tiny_base, root_adapter, toy_examples(), plain, tmp_path / "a")
    b = train_successor(tiny_base, root_adapter, toy_examples(), with_nll, tmp_path / "b")

    chosen = [ex for ex in toy_examples() if ex.reward == 1.0]
    # the first step's loss is log 2 plus the chosen answers' NLL under the parent
    assert b.loss_first > a.loss_first == pytest.approx(math.log(2), abs=1e-5)
    likely = {name: heldout_metric(tiny_base, run.adapter_dir, chosen).mean_loglik
              for name, run in (("plain", a), ("nll", b))}
    assert likely["nll"] > likely["plain"]


def test_the_same_words_after_other_conversations_are_not_one_prompt() -> None:
    """Two users' replies to "No." answer different conversations: never a pair."""
    after_owls = (("user", "Tell me about owls."), ("assistant", "Owls hunt."))
    after_sums = (("user", "What is 2 + 2?"), ("assistant", "5"))
    examples = [
        TrainingExample("User: No.", "Owls are birds.", 0.9, 1.0, "a", messages=after_owls),
        TrainingExample("User: No.", "It is 4.", 0.2, 1.0, "b", messages=after_sums),
        TrainingExample("User: No.", "Owls fly.", 0.3, 1.0, "c", messages=after_owls),
    ]

    pairs = preference_pairs(examples, min_reward=0.5)

    assert [(c.subject_id, r.subject_id) for c, r, _ in pairs] == [("a", "c")]
