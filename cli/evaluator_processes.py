"""`hcp evaluator --processes N`: N evaluator processes that follow the log together.

Each is an ordinary `hcp evaluator` started with `--share K/N` (events/log_share.py: on
the database log it reads its share of the streams; with Kafka the consumer group shares
the partitions out and the share is not used). One Python process scores on one core at
a time, so this is how an evaluator uses more cores: 2 processes on 2 cores drained the
bench's log 1.4-1.7x as fast as one (bench/evaluate.py --processes). SIGTERM and Ctrl-C
reach every process, which each finish the batch in flight and its save.

A process that fails stops the others and the command exits with its status: a share
left without its process would fall behind unseen, where a supervisor restarting the
command (systemd, Kubernetes) brings every share back.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from types import FrameType


def evaluator_command(options: list[str]) -> list[str]:
    """`hcp evaluator OPTIONS`, run by this Python."""
    return [sys.executable, "-m", "cli.main", "evaluator", *options]


def run_processes(count: int, command: list[str]) -> int:
    """Start ``count`` processes of ``command`` with ``--share K/count`` each; wait for all
    of them. The exit status: the first non-zero one of theirs, else 0."""
    children = [subprocess.Popen([*command, "--share", f"{index}/{count}"]) for index in range(count)]

    def forward(signum: int, _frame: FrameType | None = None) -> None:
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    handlers = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        # Every child is polled each time (``any`` over the polls stopped at the first
        # running one, and a later one's death went unseen).
        while not _failure(children) and None in [child.poll() for child in children]:
            time.sleep(0.2)
        failed = _failure(children)
        if failed:
            forward(signal.SIGTERM)
        for child in children:
            child.wait()
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    return failed or _failure(children)


def _failure(children: list[subprocess.Popen[bytes]]) -> int:
    return next((child.returncode for child in children if child.returncode), 0)
