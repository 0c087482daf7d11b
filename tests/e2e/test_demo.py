"""The main job as a newcomer runs it: `hcp demo`, embedded, in a fresh directory (on the
tiny model: the real one is fetched from the package index, which tests never do)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("peft")
pytestmark = [pytest.mark.train, pytest.mark.slow]


def test_demo_runs_the_whole_loop_embedded(tmp_path):
    hcp = Path(sys.executable).parent / "hcp"  # the console script the package installs
    env = {k: v for k, v in os.environ.items() if not k.startswith("HCP_")}
    env["HCP_DATA_DIR"] = str(tmp_path / "hcp-data")
    run = subprocess.run([str(hcp), "demo", "--model", "tiny", "--generations", "2",
                          "--train-tasks", "3", "--held-out", "4", "--eval-tasks", "3", "--k", "2",
                          "--v2-after", "1"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-3000:]
    assert "contract harness@1 published" in out and "published harness@2" in out
    assert "held-out, greedy" in out and "sampling train tasks" in out  # progress bars
    assert "coding@1 (parent base, contract v1" in out and "genui@2" in out
    assert "hash chain intact" in out
    report = json.loads((tmp_path / "hcp-data" / "demo" / "demo-report.json").read_text())
    assert len(report["generations"]) == 4 and report["chain_intact"]
    assert (tmp_path / "hcp-data" / "demo" / "demo-chart.png").exists()
    assert (tmp_path / "hcp-data" / "hcp.sqlite3").exists()
