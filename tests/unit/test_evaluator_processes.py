"""`hcp evaluator --processes N` (cli/evaluator_processes.py): a share each, and one
process failing stops the rest, so that a supervisor restarts them all."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import pytest

from cli.evaluator_processes import run_processes

# A stand-in for `hcp evaluator --share K/N`: marks a file named after its share; the share
# named by its second argument then exits 3, the others sleep on (as healthy evaluators run
# on) until SIGTERM. Which one fails matters: the last one's death once went unseen.
PROGRAM = """
import pathlib, signal, sys, time
folder, failing, share = pathlib.Path(sys.argv[1]), int(sys.argv[2]), sys.argv[-1]
index, count = (int(part) for part in share.split("/"))
mark = folder / f"{index}-of-{count}"
if index == failing:  # fails once the others are up (their SIGTERM handlers set)
    while len(list(folder.iterdir())) < count - 1:
        time.sleep(0.01)
    mark.write_text("started")
    sys.exit(3)
def stop(*_):
    mark.write_text("stopped")
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
mark.write_text("started")
time.sleep(60)
"""

@pytest.mark.parametrize("failing", [0, 2])
def test_each_process_gets_a_share_and_a_failure_stops_the_others(tmp_path: Path, failing: int) -> None:
    before = signal.getsignal(signal.SIGTERM)
    started = time.monotonic()

    code = run_processes(3, [sys.executable, "-c", PROGRAM, str(tmp_path), str(failing), "--share-follows"])

    assert code == 3 and time.monotonic() - started < 30  # not the sleepers' 60 s
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == {
        f"{k}-of-3": "started" if k == failing else "stopped" for k in range(3)}
    assert signal.getsignal(signal.SIGTERM) is before  # the caller's handlers are back


def test_processes_that_all_finish_exit_zero(tmp_path: Path) -> None:
    assert run_processes(2, [sys.executable, "-c", "import sys; sys.exit(0)"]) == 0
