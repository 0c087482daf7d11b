"""No answer generated twice, and no figure changed by it: the demo's loop on the tiny model
run with the engine's answer memo and without it gives the same gate records (rewards,
answers, intervals, probe sets, decisions); with it, the parent's answers to the held-out
tasks come from the base's generation-0 answers and the record says so, with the keys a
replay regenerates them by."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from cli.demo_run import DemoConfig, run_demo
from tests.unit.trainer_core.fixtures import make_container

pytest.importorskip("peft")
pytestmark = [pytest.mark.train, pytest.mark.slow]

CONFIG = DemoConfig(model="tiny", specialists=("coding", "genui"), generations=2, train_tasks=3,
                    held_out=4, eval_tasks=0, k=2, v2_after=0)
FIGURES = ("mean_reward", "rewards", "answers", "cases", "passes", "responses_sha256")


def gates(root: Path, template: Path, memo: bool) -> list[dict[str, Any]]:
    from inference.embedded.engine import EmbeddedEngine

    root.mkdir()
    (root / "hcp.sqlite3").write_bytes(template.read_bytes())
    container = make_container(f"sqlite:///{root / 'hcp.sqlite3'}", root / "data")
    if not memo:
        container.__dict__["inference"] = EmbeddedEngine(container.artifacts.open_dir, memo=None)
    try:
        report = run_demo(container, DemoConfig(**{**CONFIG.__dict__, "out_dir": root / "out"}),
                          Console(file=io.StringIO(), width=150))
        return [container.registry.adapter(r["adapter_id"]).metrics["gate"]
                for r in report["generations"]]
    finally:
        container.close()


def figures(gate: dict[str, Any]) -> dict[str, Any]:
    sides = {side: {k: gate["rollouts"][side][k] for k in FIGURES}
             for side in ("successor", "parent")}
    probes = {name: {side: {k: v for k, v in row[side].items() if k not in ("memo", "reused_from")}
                     for side in ("successor", "parent")}
              for name, row in gate["non_inferiority"]["sets"].items()}
    return {"promote": gate["promote"], "reason": gate["reason"], "interval": gate["interval"],
            "rollouts": sides, "probes": probes}


def test_a_gate_gives_the_same_figures_with_and_without_the_memo(tmp_path: Path,
                                                               sqlite_template: Path) -> None:
    with_memo = gates(tmp_path / "memo", sqlite_template, memo=True)
    without = gates(tmp_path / "plain", sqlite_template, memo=False)
    assert len(with_memo) == len(without) == 4
    assert [figures(g) for g in with_memo] == [figures(g) for g in without]
    first = with_memo[0]["rollouts"]  # generation 1, parent: the base, which answered these
    assert first["parent"]["memo"]["reused"] == first["parent"]["n"] == 4  # at generation 0
    assert first["successor"]["memo"]["generated"] == 4
    assert len(first["parent"]["memo"]["keys_sha256"]) == 64
    assert all(g["rollouts"][side]["memo"] is None for g in without for side in ("successor", "parent"))
    genui = with_memo[1]["non_inferiority"]["sets"]["general"]["parent"]["memo"]
    assert genui["reused"] == genui["reused"] + genui["generated"] > 0  # coding's gate asked them
