"""The non-inferiority check: a successor not shown to be within the margin of its parent
on a probe set is not promoted; a loss of the margin is stopped with the stated power, and
a large enough set lets a successor that lost nothing through."""

from __future__ import annotations

import random

import pytest

from trainer.gate.probes import ProbeMetrics, judge_probes, reusable_answers, summary
from trainer.gate.rollout import RolloutTarget
from trainer.gate.stats import cases_for, non_inferiority, power_of_gain
from trainer.gate.verdict import GateRecord


def metrics(scores: list[float], name: str = "general") -> ProbeMetrics:
    n = len(scores)
    return ProbeMetrics(name, tuple(f"t{i}" for i in range(n)), tuple(scores),
                        tuple(s == 1.0 for s in scores), tuple(f"a{i}" for i in range(n)))


def test_a_loss_beyond_the_margin_blocks_and_one_well_within_it_does_not():
    parent = {"general": metrics([1.0] * 40 + [0.0] * 20)}
    worse = {"general": metrics([1.0] * 20 + [0.0] * 40)}
    record, failures = judge_probes(worse, parent, 0.05, 0.95, 2000, 0)
    assert not record["ok"] and failures and "general" in failures[0]
    row = record["sets"]["general"]
    assert row["non_inferiority"]["lower"] < -0.05 and row["power"] == 0.8
    assert row["pass_rate"] == {"successor": 20 / 60, "parent": 40 / 60}
    slightly = {"general": metrics([1.0] * 39 + [0.0] * 21)}
    record, failures = judge_probes(slightly, parent, 0.05, 0.95, 2000, 0)
    assert record["ok"] and failures == [] and record["power"] == 0.8
    assert "answers" not in summary(record)["sets"]["general"]["successor"]


def test_a_loss_the_size_of_the_margin_cannot_slip_through_for_want_of_cases():
    # 24 cases of which 4 lost and 2 gained: -0.083, far from proven; the old check (a loss
    # shown with 95% confidence) let it through, this one asks for no loss beyond 0.05.
    parent = {"unseen_templates": metrics([1.0] * 12 + [0.0] * 12, "unseen_templates")}
    ours = {"unseen_templates": metrics([0.0] * 4 + [1.0] * 8 + [1.0] * 2 + [0.0] * 10,
                                        "unseen_templates")}
    record, failures = judge_probes(ours, parent, 0.05, 0.95, 2000, 0)
    row = record["sets"]["unseen_templates"]
    assert row["interval"]["high"] > -0.05  # no loss "shown": the old rule would promote
    assert not row["ok"] and failures and row["pass_if_equal"] < 0.5


def simulated_stops(n: int, flips: float, loss: float, rng: random.Random) -> float:
    """How often the check (margin 0.05, level 0.8) stops a successor with a true ``loss``,
    on sets of ``n`` pass/fail cases each of which it gains with probability ``flips`` and
    loses with probability ``flips + loss``."""
    stopped, trials = 0, 120
    for trial in range(trials):
        diffs = [(-1.0 if r < flips + loss else 1.0 if r > 1 - flips else 0.0)
                 for r in (rng.random() for _ in range(n))]
        check = non_inferiority(diffs, [0.0] * n, margin=0.05, level=0.8, resamples=300,
                                seed=trial)
        stopped += not check.ok
    return stopped / trials


def test_a_true_loss_of_the_margin_is_stopped_with_the_stated_power():
    rng = random.Random(7)
    assert simulated_stops(120, 0.15, 0.05, rng) == pytest.approx(0.8, abs=0.1)
    assert simulated_stops(120, 0.02, 0.05, rng) == pytest.approx(0.8, abs=0.1)
    # what the size buys: with few flips, 120 cases let one that lost nothing through
    assert simulated_stops(120, 0.02, 0.0, rng) < 0.15


def test_a_set_sized_by_cases_for_lets_a_successor_that_lost_nothing_through():
    sd = 0.55  # a flip in either direction on 15% of cases
    n = cases_for(sd, 0.05, 0.8, 0.9)
    assert n == pytest.approx(((0.8416 + 1.2816) * sd / 0.05) ** 2, rel=0.01)
    diffs = [1.0, -1.0] * 15 + [0.0] * (n - 30)
    check = non_inferiority(diffs, [0.0] * n, margin=0.05, level=0.8, resamples=500)
    assert check.ok and check.pass_if_equal > 0.85
    assert power_of_gain(0.5, 400, 0.1, 0.95) > power_of_gain(0.5, 100, 0.1, 0.95) > 0.5


def test_a_parents_own_gate_lends_its_probe_answers():
    record, _ = judge_probes({"general": metrics([1.0, 0.0])}, {"general": metrics([0.0, 0.0])},
                             0.05, 0.95, 200, 0, precision="bf16")
    gate = GateRecord(promote=True, reason="", non_inferiority=record)
    assert reusable_answers(gate, RolloutTarget("", None, 1, precision="bf16")) == {
        "general": (("t0", "t1"), ("a0", "a1"))}
    assert reusable_answers(gate, RolloutTarget("", None, 1, precision="fp32")) == {}
