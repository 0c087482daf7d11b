"""The README's two set-up commands are the ones CI runs: the main job (run by
tests/e2e/test_first_run.py, read from the README) and the test command `.ci/run` calls."""

from __future__ import annotations

import shlex

from tests.readme import ROOT, setup_commands


def test_the_readme_gives_two_one_line_set_up_commands():
    commands = setup_commands()
    assert len(commands) == 2, commands
    assert all("\n" not in c for c in commands), commands


def test_the_first_is_the_embedded_demo_the_first_run_test_runs():
    first, _ = setup_commands()
    assert shlex.split(first)[:2] == ["bash", "scripts/demo.sh"]


def test_ci_runs_exactly_the_second():
    _, second = setup_commands()
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert f"exec {second}" in ci, f".ci/run does not run the README's test command '{second}'"
