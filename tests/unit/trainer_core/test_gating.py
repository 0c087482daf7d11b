import math

from trainer.gate.decision import judge
from trainer.gate.policy import GatePolicy
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
