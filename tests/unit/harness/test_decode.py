"""The sampler's draw: from the softmax at the temperature, never an impossible token, the
same for the same seed (the demo's repeatability rests on it)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from harness.decode import _pick  # noqa: E402


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
