"""A new user's first hour: the README's first command in a fresh clone, with nothing set
in the environment, and `hcp demo` started from somewhere else.

Only two things differ from a newcomer's machine, both to keep the suite fast: the demo
runs on the tiny model (``--model tiny``, built locally; the real one comes from the
package index), and the clone's virtualenv sees this checkout's installed dependencies
through a ``.pth`` file, so `scripts/demo.sh`'s own `pip install -e '.[train]'` only
installs the clone itself instead of downloading torch again. Everything else (the
relative default data directory, the working directory, the paths the README names) is
exactly what a user gets.
"""

from __future__ import annotations

import json
import os
import shlex
import site
import subprocess
import sys
from pathlib import Path

import pytest

from tests.readme import setup_commands

pytest.importorskip("peft")
pytestmark = [pytest.mark.train, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def fresh_clone(into: Path) -> Path:
    """The working tree as committed plus what is not committed yet (a clone of HEAD with
    the uncommitted changes applied), with a virtualenv whose dependencies are this one's."""
    clone = into / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    diff = subprocess.run(["git", "diff", "HEAD", "--binary"], cwd=ROOT, check=True,
                          capture_output=True).stdout
    if diff:
        subprocess.run(["git", "apply", "--whitespace=nowarn"], cwd=clone, input=diff, check=True)
    for path in _untracked_files():
        (clone / path).parent.mkdir(parents=True, exist_ok=True)
        (clone / path).write_bytes((ROOT / path).read_bytes())
    subprocess.run([sys.executable, "-m", "venv", str(clone / ".venv")], check=True)
    lib = next((clone / ".venv" / "lib").glob("python3*")) / "site-packages"
    (lib / "hcp-test-deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return clone


def _untracked_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "--others", "--exclude-standard"], cwd=ROOT,
                            check=True, capture_output=True, text=True).stdout
    return [line for line in listed.splitlines() if line]


def newcomer_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("HCP_", "VIRTUAL_ENV"))}


@pytest.mark.timeout(1500)
def test_the_readmes_first_command_runs_in_a_fresh_clone(tmp_path: Path) -> None:
    clone = fresh_clone(tmp_path)
    first_command = shlex.split(setup_commands()[0])  # as the README writes it
    run = subprocess.run([*first_command, "--model", "tiny"], cwd=clone,
                         env=newcomer_env(), capture_output=True, text=True, timeout=1500)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-4000:]
    assert "specialist" in out and "promoted" in out  # the table of generations
    assert "hash chain intact" in out
    demo = clone / "hcp-data" / "demo"  # where the README says the report and chart go
    report = json.loads((demo / "demo-report.json").read_text())
    assert report["chain_intact"] and len(report["generations"]) == 6  # 2 specialists x 3
    assert (demo / "demo-chart.png").stat().st_size > 0
    assert (clone / "hcp-data" / "hcp.sqlite3").exists()


@pytest.mark.timeout(900)
def test_hcp_demo_from_another_working_directory_keeps_its_data_there(tmp_path: Path) -> None:
    clone = fresh_clone(tmp_path)
    install = subprocess.run([str(clone / ".venv" / "bin" / "python"), "-m", "pip", "install",
                              "-q", "--no-deps", "-e", str(clone)], env=newcomer_env(),
                             capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr[-2000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run = subprocess.run([str(clone / ".venv" / "bin" / "hcp"), "demo", "--model", "tiny",
                          "--generations", "2", "--train-tasks", "3", "--held-out", "4",
                          "--k", "2", "--v2-after", "1"],
                         cwd=elsewhere, env=newcomer_env(), capture_output=True, text=True,
                         timeout=900)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-4000:]
    assert "contract harness@1 published" in out and "published harness@2" in out
    assert "held-out, greedy" in out and "sampling train tasks" in out  # progress bars
    assert "coding@1 (parent base, contract v1" in out and "genui@2" in out
    report = json.loads((elsewhere / "hcp-data" / "demo" / "demo-report.json").read_text())
    assert len(report["generations"]) == 4 and report["chain_intact"]
    assert (elsewhere / "hcp-data" / "demo" / "demo-chart.png").exists()
    assert not (clone / "hcp-data").exists()


def test_a_mistyped_data_dir_is_refused_not_read_as_an_empty_log(tmp_path: Path) -> None:
    env = {**newcomer_env(), "HCP_DATA_DIR": str(tmp_path / "no-such-dir")}
    hcp = Path(sys.executable).parent / "hcp"
    for command in (["verify"], ["contract", "list"], ["db", "current"], ["audit", "all"]):
        run = subprocess.run([str(hcp), *command], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=120)
        assert run.returncode == 2, (command, run.stdout, run.stderr)
        assert "no database at" in run.stderr and "hcp db upgrade" in run.stderr, command
    assert not (tmp_path / "no-such-dir").exists()
