from __future__ import annotations

import itertools
import math
import random
from dataclasses import replace

import pytest

from trainer.gate.decision import judge
from trainer.gate.policy import GatePolicy
from trainer.ml.metrics import GateMetrics, loglik_margin


def decide_promotion(successor: GateMetrics, parent: GateMetrics, margin: float = 0.0,
                     tolerance: float = 0.0) -> dict:
    """The gate's offline rule with one tolerance for every criterion."""
    return judge(successor, parent, GatePolicy(margin=margin, regression_tolerance={"*": tolerance}))


def _brute_force(rewards: list[float], logliks: list[float]) -> tuple[float, int]:
    num = den = 0.0
    count = 0
    for i, j in itertools.permutations(range(len(rewards)), 2):
        if rewards[i] > rewards[j]:
            num += (rewards[i] - rewards[j]) * (logliks[i] - logliks[j])
            den += rewards[i] - rewards[j]
            count += 1
    return num / den, count


def test_same_prompt_pairs_weight_margins_by_reward_gap() -> None:
    prompts = ["a", "a", "b", "b", "c"]
    rewards = [1.0, 0.0, 0.5, 0.25, 0.9]
    logliks = [-1.0, -3.0, -2.0, -1.0, -9.0]

    margin, n_pairs, pairing = loglik_margin(prompts, rewards, logliks)

    # a: gap 1.0, margin +2.0; b: gap 0.25, margin -1.0; c has no pair.
    assert pairing == "same_prompt"
    assert n_pairs == 2
    assert margin == pytest.approx((1.0 * 2.0 + 0.25 * -1.0) / 1.25)


def test_without_same_prompt_pairs_all_examples_are_paired() -> None:
    rng = random.Random(0)
    rewards = [rng.choice([0.0, 0.25, 0.5, 1.0]) for _ in range(40)]  # many ties
    logliks = [rng.uniform(-5, 0) for _ in range(40)]

    margin, n_pairs, pairing = loglik_margin([str(i) for i in range(40)], rewards, logliks)

    assert pairing == "cross_prompt"
    assert (margin, n_pairs) == (pytest.approx(_brute_force(rewards, logliks)[0]),
                                 _brute_force(rewards, logliks)[1])


def test_equal_rewards_give_no_pair_and_no_margin() -> None:
    margin, n_pairs, _ = loglik_margin(["a", "b"], [1.0, 1.0], [-1.0, -2.0])

    assert n_pairs == 0 and math.isnan(margin)


PARENT = GateMetrics(
    heldout_margin=0.10, n_pairs=8, pairing="same_prompt", mean_loglik=-2.0,
    heldout_sha256="h", per_criterion={"helpful": 0.2, "safe": 0.5},
)


def test_promotes_a_successor_that_beats_the_parent_by_the_margin() -> None:
    successor = replace(PARENT, heldout_margin=0.30)

    decision = decide_promotion(successor, PARENT, margin=0.1)

    assert decision["promote"]
    assert decision["comparison"]["heldout_margin"]["delta"] == pytest.approx(0.2)
    assert decision["comparison"]["criteria"]["safe"]["ok"]


def test_refuses_a_successor_that_does_not_improve_enough() -> None:
    decision = decide_promotion(replace(PARENT, heldout_margin=0.15), PARENT, margin=0.1)

    assert not decision["promote"]
    assert "held-out margin" in decision["reason"]


def test_criterion_regressions_within_tolerance_pass_beyond_it_refuse() -> None:
    slightly_worse = replace(PARENT, heldout_margin=0.3, per_criterion={"helpful": 0.2, "safe": 0.45})
    much_worse = replace(slightly_worse, per_criterion={"helpful": 0.2, "safe": 0.3})
    missing = replace(slightly_worse, per_criterion={"helpful": 0.2})

    assert decide_promotion(slightly_worse, PARENT, tolerance=0.1)["promote"]
    refused = decide_promotion(much_worse, PARENT, tolerance=0.1)
    assert not refused["promote"] and "'safe'" in refused["reason"]
    assert not decide_promotion(missing, PARENT, tolerance=0.1)["promote"]


def test_never_promotes_across_held_out_sets_or_without_pairs() -> None:
    other_set = replace(PARENT, heldout_margin=0.9, heldout_sha256="other")
    no_pairs = replace(PARENT, heldout_margin=math.nan, n_pairs=0)

    assert not decide_promotion(other_set, PARENT)["promote"]
    decision = decide_promotion(no_pairs, replace(no_pairs))
    assert not decision["promote"]
    assert decision["comparison"]["heldout_margin"]["successor"] is None


def test_a_tie_never_promotes_even_with_zero_margin():
    decision = decide_promotion(PARENT, PARENT, margin=0.0)
    assert not decision["promote"] and "not more than 0.0 above" in decision["reason"]
