"""The gate's paired statistics and the rule that only an interval above the margin promotes."""

from __future__ import annotations

import pytest

from trainer.gate.decision import judge_rollouts
from trainer.gate.policy import GatePolicy
from trainer.gate.rollout import RolloutMetrics
from trainer.gate.stats import paired_bootstrap, sign_test


def metrics(rewards: list[float]) -> RolloutMetrics:
    return RolloutMetrics(sum(rewards) / len(rewards), len(rewards), 0, {}, (), "x",
                          rewards=tuple(rewards), cases=tuple(f"s{i}" for i in range(len(rewards))))


def policy(**kw) -> GatePolicy:
    return GatePolicy(**{"metric": "rollout", "test": "bootstrap", "margin": 0.0, **kw})


def test_the_bootstrap_is_seeded_and_brackets_the_mean():
    new, old = [1.0, 1.0, 0.0, 1.0, 0.5, 1.0] * 5, [0.0, 1.0, 0.0, 0.5, 0.5, 0.0] * 5
    a = paired_bootstrap(new, old, seed=3, resamples=2000)
    assert a == paired_bootstrap(new, old, seed=3, resamples=2000)
    assert a.low <= a.mean <= a.high and a.n == 30 and a.seed == 3 and a.level == 0.95
    assert a.mean == pytest.approx(sum(new) / 30 - sum(old) / 30)


def test_the_sign_test_is_exact():
    result = sign_test([1.0] * 6 + [0.0] * 4, [0.0] * 6 + [0.0] * 4)
    assert (result.wins, result.losses, result.ties) == (6, 0, 4)
    assert result.p_value == pytest.approx(2 / 2**6)
    with pytest.raises(ValueError):
        sign_test([1.0], [1.0, 0.0])


def test_a_clear_improvement_promotes_and_the_record_keeps_interval_n_and_seed():
    record = judge_rollouts(metrics([1.0] * 20 + [0.0] * 4), metrics([0.0] * 24), policy(seed=5))
    assert record["promote"] is True
    assert record["interval"]["low"] > 0 and record["samples"] == 24 and record["seed"] == 5
    assert record["sign_test"]["wins"] == 20 and record["test"] == "bootstrap"


def test_a_tie_never_promotes():
    same = [1.0, 0.0, 0.5] * 8
    record = judge_rollouts(metrics(same), metrics(same), policy())
    assert record["promote"] is False and record["interval"]["low"] == 0.0


def test_an_interval_that_crosses_zero_never_promotes_even_with_a_higher_mean():
    new = [1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    old = [0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0]
    record = judge_rollouts(metrics(new), metrics(old), policy())
    assert record["comparison"]["rollout_reward"]["delta"] >= 0
    assert record["interval"]["low"] < 0 < record["interval"]["high"]
    assert record["promote"] is False


def test_the_sign_test_can_decide_instead():
    record = judge_rollouts(metrics([1.0] * 10), metrics([0.0] * 10), policy(test="sign"))
    assert record["promote"] is True and record["sign_test"]["p_value"] < 0.05
    record = judge_rollouts(metrics([1.0] * 3 + [0.0] * 7), metrics([0.0] * 10), policy(test="sign"))
    assert record["promote"] is False  # 3 wins, 0 losses: p = 0.25


def test_each_statistic_is_stored_with_every_field_in_field_order():
    """Gate records are stored and hashed as written: a field added to a statistic must
    reach its JSON, in the dataclass's order (``ok`` last on the non-inferiority check)."""
    from dataclasses import asdict

    from trainer.gate.stats import non_inferiority

    new, old = [1.0, 0.0, 1.0, 1.0] * 6, [1.0, 0.0, 0.0, 1.0] * 6
    for stat in (paired_bootstrap(new, old, seed=1, resamples=500), sign_test(new, old)):
        assert list(stat.to_dict().items()) == list(asdict(stat).items())
    check = non_inferiority(new, old, margin=0.05, level=0.8)
    assert list(check.to_dict().items()) == [*asdict(check).items(), ("ok", check.ok)]
