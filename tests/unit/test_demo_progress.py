"""The demo's step lines: the time left is the remaining steps at the mean length of the
finished ones of their kind (all finished ones, for a kind not seen yet)."""

from __future__ import annotations

import io

from rich.console import Console

from cli.demo_progress import Steps


def test_time_left_counts_each_remaining_step_at_its_kinds_mean() -> None:
    out = io.StringIO()
    steps = Steps(Console(file=out, width=200),
                  [("serve", "a"), ("train", "b"), ("train", "c"), ("evaluate", "d")])
    assert steps.left(0) is None
    steps.done += [{"kind": "serve", "seconds": 10.0}, {"kind": "train", "seconds": 30.0}]
    assert steps.left(2) == 30.0 + 20.0  # another train step, and evaluate at the mean of all
    with steps.step("train", "generation 1: training and gating coding"):
        pass
    line = out.getvalue()
    assert "[3/4] generation 1: training and gating coding:" in line and "left" in line
    assert "GB resident" in line and steps.record()["peak_rss_mb"] > 0
