"""The active relay's Merkle tree builder, in a process of its own.

The builder hashes in Python. As a thread of ``hcp relay`` it held the GIL for long
stretches, and every database or Kafka call of the relay thread queued behind it for
the GIL on its way back: tens to hundreds of milliseconds added between a commit and
its message in Kafka during busy ingest. In a child process it shares nothing with the
relay but the CPUs.

The child never outlives the relay that started it:

- on Linux it asks the kernel for SIGKILL when its parent dies (``PR_SET_PDEATHSIG``),
  SIGKILL of the relay included; its page in flight is one transaction and rolls back;
- everywhere, it reads a pipe from the relay and stops (after the page in flight) at its
  end of file, which comes when the relay closes it (a clean stop) or dies in any way.

Two builders at once (a relay that is stopping while a new one takes over, ``hcp audit
tree --follow``, a checkpoint's catch-up) are safe by the tree's own persistence: each
page appends from the size it read and the node store refuses a stale size, in the same
transaction (``SqlNodeStore.write_nodes``; the leaf at that size is a primary-key
conflict for the second writer), so they never both extend the tree.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading

log = logging.getLogger(__name__)

MODULE = "cli.tree_process"
# The tree is a projection that may lag (a checkpoint builds what it lacks before it is
# signed); the relay, the API and PostgreSQL share the CPUs with it and may not.
NICENESS = 10
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


class TreeBuilderProcess:
    """Start the builder child; ``stop`` it (clean, then forcibly) when publishing ends."""

    def __init__(self, stop_timeout_s: float = 30.0) -> None:
        self.stop_timeout_s = stop_timeout_s
        self._child: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Fork the child; it logs to the relay's stderr (inherited)."""
        # Started from the relay's main thread: the death signal follows the thread that
        # forked, so a short-lived thread would take the child with it when it ended.
        self._child = subprocess.Popen(
            [sys.executable, "-m", MODULE, str(os.getpid())],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, close_fds=True)

    def stop(self) -> None:
        """Close the pipe (the child finishes its page and exits); kill it if it does not."""
        child, self._child = self._child, None
        if child is None:
            return
        if child.stdin is not None:
            child.stdin.close()
        try:
            child.wait(self.stop_timeout_s)
        except subprocess.TimeoutExpired:
            log.warning("the Merkle tree builder (pid %d) did not stop; killing it", child.pid)
            child.kill()
            child.wait()


def main(argv: list[str]) -> None:
    """The child: follow the log into the tree until the relay closes the pipe or dies."""
    parent = int(argv[0])
    _die_with(parent)
    if hasattr(os, "nice"):
        os.nice(NICENESS)
    # Imported only now, at the lower priority, and only what the builder needs (not
    # the whole container's modules, hcp/tree_root.py): a relay that has just taken over
    # needs the CPU for its backlog.
    from cli.signals import stop_on_signals
    from hcp.tree_root import tree_builder_alone

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="merkle-tree builder %(levelname)s %(name)s: %(message)s")
    stop = stop_on_signals()
    threading.Thread(target=_stop_at_end_of_pipe, args=(stop,), name="parent-pipe",
                     daemon=True).start()
    builder, engine = tree_builder_alone()
    try:
        builder.follow(stop)
    finally:
        engine.dispose()


def _die_with(parent: int) -> None:
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            log.warning("prctl(PR_SET_PDEATHSIG) failed (errno %d); the pipe alone stops "
                        "this builder", ctypes.get_errno())
    if os.getppid() != parent:  # the relay died before the signal was armed
        sys.exit(0)


def _stop_at_end_of_pipe(stop: threading.Event) -> None:
    # The relay never writes: end of file means it closed the pipe or died.
    while sys.stdin.buffer.read(4096):
        pass
    stop.set()


if __name__ == "__main__":
    main(sys.argv[1:])
