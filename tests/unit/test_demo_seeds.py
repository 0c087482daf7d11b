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
