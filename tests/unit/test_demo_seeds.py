"""`hcp demo --seeds`: which seeds a flag names, and the spread of each generation's gain."""

from __future__ import annotations

import pytest
import typer

from cli.demo_run import DemoConfig
from cli.demo_seeds import parse_seeds, summarise


def test_a_count_or_a_list_names_the_seeds():
    assert parse_seeds("3") == [0, 1, 2]
    assert parse_seeds("4,7") == [4, 7]
    for bad in ("0", "x", "1,1", "-1,2", "99"):
        with pytest.raises(typer.BadParameter):
            parse_seeds(bad)


def report(seed: int, reward: list[float], promoted: list[bool]) -> dict:
    return {"config": {"seed": seed}, "model": "smollm2-135m",
            "specialists": {"coding": {"production_by_generation": reward}},
            "generations": [{"specialist": "coding", "generation": g + 1, "promoted": p}
                            for g, p in enumerate(promoted)]}


def test_each_generation_gain_is_summarised_across_seeds():
    config = DemoConfig(model="tiny", specialists=("coding",), generations=2, train_tasks=1,
                        held_out=2, eval_tasks=0, k=1, temperature=0.5, seed=0, v2_after=0,
                        out_dir=None, device=None)
    summary = summarise(config, [report(0, [0.2, 0.5, 0.6], [True, True]),
                                 report(1, [0.2, 0.3, 0.3], [True, False])], [], {0: 1.0, 1: 1.0})
    coding = summary["specialists"]["coding"]
    step = coding["measures"]["held-out reward"]["step"]
    assert step[0]["mean"] == pytest.approx(0.2) and step[0]["min"] == pytest.approx(0.1)
    assert step[0]["max"] == pytest.approx(0.3) and step[0]["sd"] == pytest.approx(0.1414, abs=1e-3)
    assert coding["measures"]["held-out reward"]["vs_base"][-1]["mean"] == pytest.approx(0.25)
    assert coding["promoted_by_generation"] == [2, 1] and summary["seeds"] == [0, 1]


def test_compounding_pairs_generations_by_task_over_the_seeds_and_losses_name_the_worst():
    from cli.demo_compound import compounding, losses

    def run(seed: int, passes: list[list[int]], credit: list[float]) -> dict:
        return {"config": {"seed": seed}, "specialists": {"coding": {
            "evaluation": {"passes_by_generation": passes},
            "probes_by_generation": {"retention": {"credit_by_generation": credit}}}}}

    gen0, gen1 = [0] * 40, [1] * 8 + [0] * 32
    gen2 = [1] * 16 + [0] * 24  # every seed solves 8 more tasks at generation 2
    reports = [run(0, [gen0, gen1, gen2], [0.5, 0.45, 0.5]),
               run(1, [gen0, gen1, gen1], [0.5, 0.52, 0.38])]
    rows = compounding(reports, "coding")
    assert [r["generation"] for r in rows] == [1, 2]
    assert rows[1]["per_seed"] == [pytest.approx(0.2), pytest.approx(0.0)]
    assert rows[1]["mean"] == pytest.approx(0.1) and rows[1]["above_zero"]
    retention = losses(reports, "coding", 0.05)["retention"]
    assert retention["worst_step"] == pytest.approx(-0.14) and retention["beyond_margin"]
    assert retention["worst_versus_base"] == pytest.approx(-0.12)
