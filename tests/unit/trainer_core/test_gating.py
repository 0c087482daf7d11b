import math

from trainer.gate.decision import judge, judge_rollouts, with_power
from trainer.gate.policy import GatePolicy
from trainer.gate.probes import ProbeMetrics, judge_probes
from trainer.gate.rollout import RolloutMetrics
from trainer.ml.metrics import GateMetrics


def metrics(margin: float, **criteria: float) -> GateMetrics:
    return GateMetrics(heldout_margin=margin, n_pairs=10, pairing="same_prompt", mean_loglik=-2.0,
                       heldout_sha256="h", per_criterion=criteria)


def test_promotes_when_the_margin_is_beaten_and_no_gated_criterion_regresses():
    decision = judge(metrics(0.5, quality=0.3, style=-1.0), metrics(0.2, quality=0.32, style=0.5),
                     GatePolicy(margin=0.1, regression_tolerance={"quality": 0.05}))
    assert decision["promote"], decision["reason"]
    assert decision["comparison"]["criteria"]["style"]["gated"] is False


def test_a_gated_criterion_beyond_its_tolerance_blocks_promotion():
    decision = judge(metrics(0.5, quality=0.2), metrics(0.2, quality=0.3),
                     GatePolicy(regression_tolerance={"*": 0.05}))
    assert not decision["promote"] and "quality" in decision["reason"]


def test_too_small_a_gain_is_rejected_and_recorded():
    decision = judge(metrics(0.25), metrics(0.2), GatePolicy(margin=0.1))
    assert not decision["promote"]
    assert math.isclose(decision["comparison"]["heldout_margin"]["delta"], 0.05)


def test_a_criterion_the_parent_cannot_be_measured_on_does_not_block():
    decision = judge(metrics(0.5, quality=float("nan")), metrics(0.2, quality=float("nan")),
                     GatePolicy(regression_tolerance={"*": 0.0}))
    assert decision["promote"]
    assert decision["comparison"]["criteria"]["quality"]["note"].startswith("parent not measurable")


def test_every_gate_record_states_its_power_or_why_it_has_none():

    offline = with_power(judge(metrics(0.5), metrics(0.2), GatePolicy()), GatePolicy())
    assert offline["power"]["value"] is None and "offline" in offline["power"]["note"]
    assert offline["power"]["probes"] is None and "probe_tasks = 0" in offline["power"]["probes_note"]

    policy = GatePolicy(metric="rollout", test="bootstrap", probe_tasks=4)
    side = RolloutMetrics(0.5, 4, 0, {}, (), "s", rewards=(1.0, 0.0, 1.0, 0.0),
                          cases=("a", "b", "c", "d"))
    probe = ProbeMetrics("retention", ("a", "b"), (1.0, 0.0), (True, False), ("x", "y"))
    found, _ = judge_probes({"retention": probe}, {"retention": probe}, 0.05, 0.95, 200, 0)
    rollout = with_power({**judge_rollouts(side, side, policy), "non_inferiority": found}, policy)
    assert rollout["power"]["n"] == 4 and rollout["power"]["value"] is not None
    assert rollout["power"]["probes"] == 0.8 and "probes_note" not in rollout["power"]
    unregistered = with_power({"promote": False, "reason": "r", "comparison": {"x": 1},
                               "non_inferiority": {"ok": True, "note": "no probe harness registered"}},
                              policy)
    assert unregistered["power"]["probes_note"] == "no probe harness registered"
    assert "per-case" in unregistered["power"]["note"]
