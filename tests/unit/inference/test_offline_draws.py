"""The sampler's draw: from the softmax at the temperature, never an impossible token, the
same for the same seed (the demo's repeatability rests on it)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from inference.embedded.offline import _pick  # noqa: E402


def draws(logits: list[float], temperature: float, n: int, seed: int = 0) -> list[int]:
    gen = torch.Generator().manual_seed(seed)
    return _pick(torch.tensor([logits]).repeat(n, 1), temperature, gen).tolist()


def test_draws_follow_the_softmax_at_the_temperature():
    logits, n = [0.0, 1.0, 2.0], 40_000
    for temperature in (1.0, 0.5):
        expected = torch.softmax(torch.tensor(logits) / temperature, -1).tolist()
        got = draws(logits, temperature, n)
        for token, p in enumerate(expected):
            assert abs(got.count(token) / n - p) < 0.01, (temperature, token)


def test_a_token_without_probability_is_never_drawn_and_greedy_takes_the_maximum():
    got = draws([float("-inf"), 0.0, float("-inf"), 0.0], 0.7, 5_000)
    assert set(got) == {1, 3}
    assert draws([0.0, 3.0, 1.0], 0.0, 3) == [1, 1, 1]


def test_the_same_seed_draws_the_same_tokens():
    logits = torch.randn(49_152).tolist()
    assert draws(logits, 0.5, 64, seed=7) == draws(logits, 0.5, 64, seed=7)
    assert draws(logits, 0.5, 64, seed=7) != draws(logits, 0.5, 64, seed=8)


def test_a_batch_ends_at_its_rows_or_where_its_memory_would_not_fit():
    from inference.embedded.offline import Memory, batches

    lengths = [30, 10, 20, 40, 50]
    assert batches(lengths, 2, 4, 8, None) == [(0, [1, 2]), (2, [0, 3]), (4, [4])]
    tight = Memory(budget=2 * 1000 * (30 + 8), kv_per_token=1000, heads=0)  # two rows of 30
    assert batches(lengths, 1, 64, 8, tight) == [(0, [1, 2]), (2, [0]), (3, [3]), (4, [4])]
    assert batches([500], 4, 64, 8, Memory(1, 1, 1)) == [(0, [0])]  # one prompt at least
