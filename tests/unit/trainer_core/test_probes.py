"""The non-inferiority check: a successor that loses more than the margin on a probe set,
with confidence, is not promoted; noise within the margin is not a loss."""

from __future__ import annotations

from trainer.gate.probes import ProbeMetrics, judge_probes, reusable_answers, summary
from trainer.gate.rollout import RolloutTarget


def metrics(scores: list[float], name: str = "general") -> ProbeMetrics:
    n = len(scores)
    return ProbeMetrics(name, tuple(f"t{i}" for i in range(n)), tuple(scores),
                        tuple(s == 1.0 for s in scores), tuple(f"a{i}" for i in range(n)))


def test_a_confident_loss_beyond_the_margin_blocks_and_a_small_one_does_not():
    parent = {"general": metrics([1.0] * 40 + [0.0] * 20)}
    worse = {"general": metrics([1.0] * 20 + [0.0] * 40)}
    record, failures = judge_probes(worse, parent, 0.05, 0.95, 2000, 0)
    assert not record["ok"] and failures and "general" in failures[0]
    row = record["sets"]["general"]
    assert row["interval"]["high"] < -0.05 and row["pass_rate"] == {"successor": 20 / 60,
                                                                      "parent": 40 / 60}
    slightly = {"general": metrics([1.0] * 39 + [0.0] * 21)}
    record, failures = judge_probes(slightly, parent, 0.05, 0.95, 2000, 0)
    assert record["ok"] and failures == []
    assert "answers" not in summary(record)["sets"]["general"]["successor"]


def test_a_parents_own_gate_lends_its_probe_answers():
    record, _ = judge_probes({"general": metrics([1.0, 0.0])}, {"general": metrics([0.0, 0.0])},
                             0.05, 0.95, 200, 0, precision="bf16")
    gate = {"non_inferiority": record}
    assert reusable_answers(gate, RolloutTarget("", None, 1, precision="bf16")) == {
        "general": (("t0", "t1"), ("a0", "a1"))}
    assert reusable_answers(gate, RolloutTarget("", None, 1, precision="fp32")) == {}
