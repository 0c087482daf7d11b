"""`hcp evaluator --processes N`: N evaluator processes that follow the log together.

Each is an ordinary `hcp evaluator` started with `--share K/N` (events/log_share.py: on
the database log it reads its share of the streams; with Kafka the consumer group shares
the partitions out and the share is not used). One Python process scores on one core at
a time, so this is how an evaluator uses more cores: 2 processes on 2 cores drained the
bench's log 1.5-2x as fast as one (bench/evaluate.py --processes). SIGTERM and Ctrl-C
reach every process, which each finish the batch in flight and its save.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from types import FrameType


def run_processes(count: int, options: list[str]) -> int:
    """Start ``count`` `hcp evaluator` processes with ``options`` and a share each; wait
    for all of them. The exit status: the first non-zero one of theirs, else 0."""
    children = [subprocess.Popen([sys.executable, "-m", "cli.main", "evaluator", *options,
                                  "--share", f"{index}/{count}"]) for index in range(count)]

    def forward(signum: int, _frame: FrameType | None) -> None:
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    codes = [child.wait() for child in children]
    return next((code for code in codes if code), 0)
