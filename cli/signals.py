"""The stop flag that SIGTERM and Ctrl-C set, in a module of its own: the relay's Merkle
tree builder child (cli/tree_process.py) needs it without the container's imports."""

from __future__ import annotations

import signal
import threading
from types import FrameType


def stop_on_signals() -> threading.Event:
    """A flag long-running loops poll: they finish the batch in flight, then return, so
    nothing is left half-done (rewards stored before offsets, pages before checkpoints)."""
    stop = threading.Event()

    def handle(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)
    return stop
