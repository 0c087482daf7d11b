from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.unit.trainer.conftest import toy_examples
from trainer.ml.data import (
    IGNORE_INDEX,
    TrainingExample,
    examples_sha256,
    select_weighted,
)


def _ex(reward: float, weight: float = 1.0, subject: str = "s") -> TrainingExample:
    return TrainingExample("p", "r", reward=reward, weight=weight, subject_id=subject)


def test_selection_drops_low_and_non_positive_rewards_and_weights_by_reward() -> None:
    examples = [_ex(0.2, subject="low"), _ex(0.9, 2.0, "kept"), _ex(0.6, 0.0, "zero-weight")]

    selected = select_weighted(examples, min_reward=0.5)

    assert [(ex.subject_id, w) for ex, w in selected] == [("kept", pytest.approx(1.8))]


def test_selection_and_digest_do_not_depend_on_input_order() -> None:
    examples = toy_examples()
    shuffled = examples[:]
    random.Random(3).shuffle(shuffled)

    assert select_weighted(shuffled, 0.0) == select_weighted(examples, 0.0)
    assert examples_sha256(shuffled) == examples_sha256(examples)
    assert examples_sha256(examples[1:]) != examples_sha256(examples)


@pytest.mark.train
def test_loss_is_only_on_response_tokens_and_padding_is_masked(tiny_base: Path) -> None:
    from trainer.ml.data import encode_examples
    from trainer.ml.load import load_tokenizer

    tokenizer = load_tokenizer(tiny_base)
    examples = [
        TrainingExample("ab", "cd", 1.0, 1.0, "x"),
        TrainingExample("a", "c", 1.0, 0.5, "y"),
    ]

    enc = encode_examples(tokenizer, examples, max_len=16)

    bos, eos, pad = 257, 258, 256
    assert enc.input_ids.tolist() == [[bos, 97, 98, 99, 100, eos], [bos, 97, 99, eos, pad, pad]]
    assert enc.labels.tolist() == [
        [IGNORE_INDEX] * 3 + [99, 100, eos],
        [IGNORE_INDEX] * 2 + [99, eos] + [IGNORE_INDEX] * 2,
    ]
    assert enc.attention_mask.tolist() == [[1] * 6, [1] * 4 + [0] * 2]
    assert enc.weights.tolist() == [1.0, 0.5]


@pytest.mark.train
def test_truncation_keeps_the_response_and_the_end_of_the_prompt(tiny_base: Path) -> None:
    from trainer.ml.data import encode_pair
    from trainer.ml.load import load_tokenizer

    ids, start = encode_pair(load_tokenizer(tiny_base), "abcdef", "xy", max_len=6)

    assert ids == [100, 101, 102, ord("x"), ord("y"), 258]
    assert start == 3


@pytest.mark.train
def test_batch_selection_trims_padding_columns(tiny_base: Path) -> None:
    import torch

    from trainer.ml.data import encode_examples
    from trainer.ml.load import load_tokenizer

    examples = [
        TrainingExample("a", "long response", 1.0, 1.0, "x"),
        TrainingExample("a", "b", 1.0, 1.0, "y"),
    ]
    enc = encode_examples(load_tokenizer(tiny_base), examples, max_len=64)

    batch = enc.select(torch.tensor([1]))

    assert batch.input_ids.shape == (1, 4)
    assert int(batch.attention_mask.sum()) == 4


@pytest.mark.train
def test_batch_schedule_is_seeded_and_covers_each_epoch() -> None:
    pytest.importorskip("torch")
    from trainer.ml.objective import batch_schedule

    first = batch_schedule(5, batch_size=2, steps=5, seed=7)
    again = batch_schedule(5, batch_size=2, steps=5, seed=7)
    other = batch_schedule(5, batch_size=2, steps=5, seed=8)

    flat = [i for b in first for i in b.tolist()]
    assert [b.tolist() for b in first] == [b.tolist() for b in again]
    assert [b.tolist() for b in first] != [b.tolist() for b in other]
    assert sorted(flat[:5]) == sorted(flat[5:]) == [0, 1, 2, 3, 4]
